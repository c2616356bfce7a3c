"""A problem folder, read: its loader (load.py: native, OpenEvolve, ShinkaEvolve, LEVI, GEPA
and SkyDiscover formats, each in its own module) into one typed description (model.py), its
data and private data seed, its reference programs, and `evolve check`'s verdict (check.py).

Nothing is re-exported here: import from the modules (`from evolve.problem.load import
load_problem`), so importing one of them never loads the loader and what it imports.
"""
