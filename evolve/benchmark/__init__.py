"""`evolve bench`: the same problems, seeds and budget of LLM calls for every model or
search, and one normalised held-out number per problem to compare them by.

normalise: the 0..100 scale (seed to best baseline) and its references; measure: what one
finished run did with its calls, read back from the archive; curve: best-so-far held-out
score against calls; table: one row per problem over its seeds; runner: the runs themselves,
each a normal `evolve run` process, sharing one local model server. Nothing here draws or
prints: the command (evolve/cli/bench.py), the PNG (evolve/export/bench_picture.py) and the
web page (evolve/web/) show what it returns.
"""
