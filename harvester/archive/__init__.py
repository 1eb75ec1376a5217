"""Archive output: rotating WARC files (``warc.py``), DIDL records and CDXJ indexes."""
