"""The report's page (Jinja2, autoescaped) and stylesheet, kept as Python strings so the
wheel carries them without a package-data rule. No tag here loads anything: the CSP
meta tag allows inline styles and data: images only, and no script at all."""

CSS = """
:root { --fg: #1d232a; --muted: #66707a; --line: #e3e6ea; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 1.2em 1.6em 2em; color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.5em; margin: 0 0 .2em; word-break: break-all; }
h2 { font-size: 1.15em; margin: 1.6em 0 .5em; border-bottom: 1px solid var(--line); }
.meta, .why, footer { color: var(--muted); } .why { display: block; font-size: .8em; }
.pid, code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .92em; }
.figures { display: flex; flex-wrap: wrap; gap: .5em; margin: .8em 0; }
.fig { border: 1px solid var(--line); border-radius: 6px; padding: .35em .75em; background: #fbfcfd; }
.fig .label { display: block; color: var(--muted); font-size: .75em; text-transform: uppercase; }
.fig .value { font-size: 1.15em; font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: .8em; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: .4em; }
figure.wide { grid-column: 1 / -1; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; font-size: .9em; }
table.grid { border-collapse: collapse; font-variant-numeric: tabular-nums; }
table.grid th, table.grid td { padding: .3em .6em; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
table.grid th { background: var(--soft); } table.grid .n { text-align: right; }
.up { color: #198754; font-weight: 600; } .down { color: #b00020; font-weight: 600; }
.notice { border: 1px solid #e9c46a; background: #fff8e1; border-radius: 6px; padding: .6em .9em; }
.src { border: 1px solid var(--line); border-radius: 6px; overflow: auto; max-height: 80vh; }
.src pre, pre.artifact { margin: 0; padding: .6em .8em; font: 12.5px/1.45 ui-monospace, Menlo, monospace; }
.file-list { margin: .5em 1em; font: 12.5px/1.6 ui-monospace, Menlo, monospace; }
.file-list .lines { color: #6a737d; }
h3.file-path { font: 600 13px/1.4 ui-monospace, Menlo, monospace; margin: .8em .8em .3em; }
.code.file td.linenos { width: 1%; }
pre.artifact { white-space: pre-wrap; word-break: break-word; background: #fbfcfd; border: 1px solid var(--line); }
.hl table { border-collapse: collapse; } .hl .linenos { color: #aab; padding-right: .6em; border-right: 1px solid var(--line); }
footer { margin-top: 2.5em; padding-top: .8em; border-top: 1px solid var(--line); font-size: .85em; }
@media print { .src { max-height: none; overflow: visible; } figure { break-inside: avoid; } }
"""

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ run.run_id }} · evolve report</title>
<style>{{ css }}</style>
</head>
<body>
<h1>{{ run.run_id }}</h1>
<p class="meta">An evolve run on problem <strong>{{ run.problem }}</strong>
(<code>{{ run.problem_dir }}</code>), started {{ started }}.</p>

<section class="figures">
{%- macro fig(label, value, why="") %}
<div class="fig"><span class="label">{{ label }}</span><span class="value">{{ value }}</span>
{%- if why %}<span class="why">{{ why }}</span>{% endif %}</div>
{%- endmacro %}
{{ fig("status", run.status, run.stop_reason or "") }}
{{ fig("iterations", run.progress) }}
{{ fig("best train score", run.best_score | num, "on this run's own data") }}
{{ fig("held-out score of the best", (best.test_score if best else None) | num, "on this run's own data") }}
{{ fig("seed score", run.seed_score | num) }}
{{ fig("improvement over seed", gain) }}
{{ fig("valid candidates", run.valid_pct | pct, run.valid ~ " of " ~ run.programs ~ " programs, the seed included") }}
{{ fig("tokens", "{:,}".format(run.prompt_tokens + run.completion_tokens),
       "{:,} prompt, {:,} completion".format(run.prompt_tokens, run.completion_tokens)) }}
{{ fig("cost", run.cost_usd | usd, run.llm_calls ~ " LLM calls") }}
{{ fig("duration", run.duration_s | duration) }}
{% if agents.sessions %}{{ fig("agent sessions", agents.sessions,
       "{} turns, {} tool calls, {} train evaluations inside sessions, {:,} tokens".format(
       agents.turns, agents.tool_calls, agents.evaluations, agents.tokens)) }}{% endif %}
</section>
<p class="meta">Models: {% for name, n in models %}<code>{{ name }}</code> ({{ n }}){{ ", " if not loop.last }}
{%- else %}none recorded{% endfor %}.</p>

{% if charts %}<h2>Charts</h2>
<div class="charts">
{% for c in charts %}<figure{% if c.wide %} class="wide"{% endif %}><figcaption>{{ c.title }}</figcaption>
{{ c.svg }}</figure>
{% endfor %}</div>{% endif %}

<h2>Best program</h2>
{% if best %}
<p><span class="pid">{{ best.program_id }}</span>: iteration {{ best.iteration }}, {{ best.kind }}
{%- if best.model %} by <code>{{ best.model }}</code>{% endif %}; train {{ best.score | num }},
held-out {{ best.test_score | num }} (on this run's own private data).</p>
<p id="leaderboard">On the leaderboard, {{ board_caption }}, the data every run of
{{ run.problem }} in this archive is ranked on:
{%- if board and board.score is not none %} train {{ board.score | num }}, held-out {{ board.test_score | num }}
{%- if place %}; place {{ place[0] }} of {{ place[1] }} distinct programs across its runs{% endif %}.
{%- elif board %} its evaluation there ended <code>{{ board.status }}</code>: unranked.
{%- else %} not scored there (a run made before the archive kept a leaderboard): unranked.{% endif %}</p>
{% if metrics %}<table class="grid">
<thead><tr><th>metric</th><th class="n">train</th><th class="n">held-out</th></tr></thead>
<tbody>{% for name, train, test in metrics %}
<tr><td><code>{{ name }}</code></td><td class="n">{{ train | num }}</td><td class="n">{{ test | num }}</td></tr>
{%- endfor %}</tbody></table>{% endif %}
{% else %}
<div class="notice"><strong>No valid program.</strong> No program of this run passed evaluation
{%- if seed %}; the seed <span class="pid">{{ seed.program_id }}</span> ended <code>{{ seed.status }}</code>{% endif %}.</div>
{% for name, text in artifacts %}<p><code>{{ name }}</code></p><pre class="artifact">{{ text }}</pre>
{% endfor %}
{% endif %}

{% if steps %}<h2>Lineage from the seed to the best</h2>
<table class="grid">
<thead><tr><th>program</th><th class="n">iteration</th><th>kind</th><th>model</th><th class="n">train</th>
<th class="n">change vs parent</th><th class="n">held-out</th></tr></thead>
<tbody>{% for s in steps %}
<tr><td class="pid">{{ s.p.program_id }}</td><td class="n">{{ s.p.iteration }}</td>
<td>{{ s.p.kind }}{% if s.p.edit_kind %} ({{ s.p.edit_kind }}){% endif %}</td><td>{{ s.p.model or "" }}</td>
<td class="n">{{ s.p.score | num }}</td>
<td class="n {{ 'up' if s.change.startswith('+') and s.change != '+0' else 'down' if s.change.startswith('-') }}">{{ s.change }}</td>
<td class="n">{{ s.p.test_score | num }}</td></tr>
{%- endfor %}</tbody></table>{% endif %}

{% if diff %}<h2>Changes from the seed</h2>
<div class="src">{{ diff }}</div>
{% elif best %}<p class="meta">The best program is the seed itself.</p>{% endif %}

{% if code %}<h2>Code of the best program</h2>
<div class="src">{{ code }}</div>{% endif %}

<footer>Written {{ written }} by evolve {{ version }} from <code>{{ archive }}</code>.
Self-contained: no script, nothing fetched from a network.</footer>
</body>
</html>
"""
