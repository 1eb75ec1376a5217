"""Browser capture (``--browser``): each crawled page loaded in headless Chromium over the
Chrome DevTools Protocol, everything it loads archived as received. Imported only when a crawl
asks for it (``harvester/crawl/build.py``)."""
