"""Benchmarks: each module ``bench/NAME.py`` defines ``run(argv) -> Report``.

Every comparison runs the project and its named peer side by side in the same process run,
alternating, and reports ratios: absolute times drift on shared machines, ratios much less.
"""
