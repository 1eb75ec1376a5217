"""The SQLite implementation of the storage seam (``harvester/storage/protocol.py``): the
only code of the harvester, besides the seam's own modules, that holds SQL."""
