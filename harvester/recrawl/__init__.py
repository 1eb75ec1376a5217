"""Recrawl scheduling: change-rate estimates and revisit policies (sans-IO), for ``watch``."""
