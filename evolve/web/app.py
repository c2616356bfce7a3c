"""The Starlette app: HTML pages at stable addresses and the same data as JSON under /api.

Sync handlers: Starlette runs them in its thread pool, and each archive read opens its
own read-only connection. Every failure becomes a 404/400/500 page or JSON object with
one line of text, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from evolve.archive import ArchiveError, ArchiveReader
from evolve.web import charts, render, views
from evolve.web.baselines import Baselines
from evolve.web.views import NotFound

HERE = Path(__file__).parent


def plotly_js() -> Path:
    """plotly.min.js from the installed plotly package: served locally, never a CDN."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every {{ }} is escaped: candidate text renders as text
        undefined=jinja2.StrictUndefined,
        finalize=render.shown,  # and its invisible characters are shown as escapes
    )
    env.filters.update(render.FILTERS)
    env.filters["url"] = lambda s: quote(str(s), safe="")
    env.globals.update(
        code_html=render.code_html,
        diff_html=render.diff_html,
        files_html=render.files_html,
        file_diffs_html=render.file_diffs_html,
        delta=render.delta,
        status_color={**charts.STATUS_COLORS, **charts.RUN_COLORS},
    )
    return env


class BadRequest(ValueError):
    """A malformed query parameter: a 400 naming it."""


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name}={raw!r}: expected an integer") from None


def make_app(
    runs_dir: str | Path, baselines: Baselines | None = None, hosts: Sequence[str] | None = None
) -> Starlette:
    """The app on the archive in `runs_dir`. `hosts`: the only Host header values answered
    (the names it listens on: a page on another name that resolves here, DNS rebinding,
    gets a 400, not the archive); None answers any, for an app on no socket (a TestClient)."""
    reader = ArchiveReader(runs_dir)  # ArchiveError: no archive there, said in one line
    env = _templates()
    scorer = baselines or Baselines(enabled=False)

    def page(template: str, status: int = 200, **ctx) -> HTMLResponse:
        html = env.get_template(template).render(runs_dir=str(reader.runs_dir), **ctx)
        return HTMLResponse(html, status_code=status)

    # ---- pages ----------------------------------------------------------------------
    def runs_page(request: Request) -> Response:
        return page("runs.html", runs=reader.runs(), problems=reader.problems())

    def run_page(request: Request) -> Response:
        run = views.get_run(reader, request.path_params["run_id"])
        progs = reader.programs(run.run_id)
        figures = render.shown_data(views.run_figures(reader, run, progs))
        search = views.run_search(reader, run)
        return page(
            "run.html", run=run, figures=figures, tables=views.run_tables(progs), search=search
        )

    def program_page(request: Request) -> Response:
        detail = views.program_detail(reader, request.path_params["program_id"])
        return page("program.html", **detail)

    def lineage_page(request: Request) -> Response:
        chain = views.lineage(reader, request.path_params["program_id"])
        return page(
            "lineage.html",
            program=chain[0],
            chain=chain,
            figure=render.shown_data(render.finite(charts.lineage_figure(chain))),
        )

    def problem_page(request: Request) -> Response:
        return page(
            "problem.html", **views.leaderboard(reader, request.path_params["name"], scorer)
        )

    def benches_page(request: Request) -> Response:
        return page("benches.html", benches=reader.benches())

    def bench_page(request: Request) -> Response:
        info, summaries = views.bench(reader, request.path_params["bench_id"])
        figure = render.shown_data(views.bench_figure(summaries))
        return page("bench.html", info=info, summaries=summaries, figure=figure)

    # ---- JSON API ---------------------------------------------------------------------
    def api_runs(request: Request) -> Response:
        return JSONResponse([views.run_json(r) for r in reader.runs()])

    def api_run(request: Request) -> Response:
        run = views.get_run(reader, request.path_params["run_id"])
        return JSONResponse(
            {
                **views.run_json(run),
                "config": render.finite(run.config),
                "search": views.run_search(reader, run),
            }
        )

    def api_run_programs(request: Request) -> Response:
        run = views.get_run(reader, request.path_params["run_id"])
        after = _int_param(request, "after", -1)
        code = request.query_params.get("code", "0") not in ("0", "false", "")
        progs = reader.programs(run.run_id, after_iteration=after, code=code)
        return JSONResponse([views.program_json(p, code=code) for p in progs])

    def api_run_figures(request: Request) -> Response:
        run = views.get_run(reader, request.path_params["run_id"])
        figures = views.run_figures(reader, run, reader.programs(run.run_id))
        return JSONResponse(render.shown_data(figures))  # drawn as they are

    def api_program(request: Request) -> Response:
        detail = views.program_detail(reader, request.path_params["program_id"])
        call, agent, command = detail["call"], detail["agent"], detail["command"]
        return JSONResponse(
            {
                **views.program_json(detail["program"], code=True),
                "files": detail["files_map"],
                "diff_to_parent": detail["diff"],
                "llm_call": render.finite(call.__dict__) if call is not None else None,
                "proposal": render.finite(reader.proposal(detail["program"])),
                "agent": render.finite(agent.to_json()) if agent is not None else None,
                "command": render.finite(asdict(command)) if command is not None else None,
            }
        )

    def api_lineage(request: Request) -> Response:
        chain = views.lineage(reader, request.path_params["program_id"])
        return JSONResponse(views.lineage_json(chain))

    def api_problems(request: Request) -> Response:
        return JSONResponse(reader.problems())

    def api_leaderboard(request: Request) -> Response:
        name = request.path_params["name"]
        limit = _int_param(request, "limit", 50)
        if not 1 <= limit <= 10_000:
            raise BadRequest(f"query parameter limit={limit}: expected 1 to 10000")
        return JSONResponse(views.leaderboard_json(views.leaderboard(reader, name, scorer, limit)))

    def api_benches(request: Request) -> Response:
        return JSONResponse([render.finite(b.__dict__) for b in reader.benches()])

    def api_bench(request: Request) -> Response:
        return JSONResponse(views.bench_json(*views.bench(reader, request.path_params["bench_id"])))

    def plotly(request: Request) -> Response:
        # a day in the browser's cache: the next page reuses the parsed library
        return FileResponse(
            plotly_js(),
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    def pygments_css(request: Request) -> Response:
        return Response(render.pygments_css(), media_type="text/css")

    # ---- errors -------------------------------------------------------------------------
    def error(request: Request, status: int, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message, "status": status}, status_code=status)
        return page("error.html", status=status, code=status, message=message)

    def guarded(handler):
        """The handler, with every failure answered as one line (and never re-raised,
        which would print a traceback in the server's console)."""

        def run(request: Request) -> Response:
            try:
                return handler(request)
            except NotFound as e:
                return error(request, 404, str(e))
            except BadRequest as e:
                return error(request, 400, str(e))
            except ArchiveError as e:
                return error(request, 503, " ".join(str(e).splitlines()))
            except Exception as e:  # a bug: its type, not its traceback
                return error(request, 500, f"internal error: {type(e).__name__}")

        return run

    def http_error(request: Request, exc: Exception) -> Response:
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        return error(request, code, "no such page" if code == 404 else str(exc.__class__.__name__))

    P = "{program_id:path}"
    checked_hosts = (
        [] if hosts is None else [Middleware(TrustedHostMiddleware, allowed_hosts=hosts)]
    )
    return Starlette(
        routes=[
            Route("/", guarded(runs_page)),
            Route("/runs/{run_id:path}", guarded(run_page)),
            Route(f"/programs/{P}/lineage", guarded(lineage_page)),
            Route(f"/programs/{P}", guarded(program_page)),
            Route("/problems/{name:path}", guarded(problem_page)),
            Route("/bench", guarded(benches_page)),
            Route("/bench/{bench_id:path}", guarded(bench_page)),
            Route("/api/runs", guarded(api_runs)),
            Route("/api/runs/{run_id:path}/programs", guarded(api_run_programs)),
            Route("/api/runs/{run_id:path}/figures", guarded(api_run_figures)),
            Route("/api/runs/{run_id:path}", guarded(api_run)),
            Route(f"/api/programs/{P}/lineage", guarded(api_lineage)),
            Route(f"/api/programs/{P}", guarded(api_program)),
            Route("/api/problems", guarded(api_problems)),
            Route("/api/problems/{name:path}/leaderboard", guarded(api_leaderboard)),
            Route("/api/bench", guarded(api_benches)),
            Route("/api/bench/{bench_id:path}", guarded(api_bench)),
            Route("/static/plotly.min.js", plotly),
            Route("/static/pygments.css", pygments_css),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        exception_handlers={HTTPException: http_error},
        middleware=checked_hosts,
    )
