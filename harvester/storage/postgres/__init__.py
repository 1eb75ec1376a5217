"""The PostgreSQL implementation of the storage seam (``harvester/storage/protocol.py``), for a
job that many workers share: the SQLite modules' SQL, run on a PostgreSQL connection, plus the
leases that give each host to one worker at a time (``leases.py``)."""
