"""ResourceSync (ANSI/NISO Z39.99-2017) over the provider's file index.

:mod:`.documents` builds the sitemaps (sans-IO), :mod:`.ledger` follows the index and keeps
every change and each version's MD5, :mod:`.publication` names the documents and builds each
from the ledger, :mod:`.source` joins them to the index, :mod:`.views` serves them beside the
OAI-PMH endpoint, and :mod:`.static` writes them as files for a site served by nginx or Apache
alone.
"""
