"""`evolve ui`: a local web view of the archive (runs, leaderboards, programs, lineages).

archive_json: what the pages and the JSON API say about runs and programs; charts: the
Plotly figures; render: code, diffs and text made safe for HTML; baselines: a problem's
reference programs, scored once and cached; app: the Starlette routes; server: uvicorn.
Everything shown is read through the read-only ArchiveReader, and everything a candidate
or a model wrote is escaped (Jinja2 autoescape, Pygments, JSON with `<` escaped).
"""
