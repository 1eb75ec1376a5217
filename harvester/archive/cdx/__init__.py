"""The collection's CDXJ index: the two keys of a line, which records are captures and
their lines, the lines read back from WARC files, and the index kept current.

May import: the rest of ``harvester.archive`` and the harvester's top-level modules."""
