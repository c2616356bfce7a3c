// Live updates by polling the JSON API. Everything from the archive is put in the page
// with textContent or as attribute values, never as HTML: candidate text stays text.
"use strict";
const evolveLive = (() => {
  const fmt = (v, d = 6) => (v === null || v === undefined ? "–" : (typeof v === "number" ? Number(v.toPrecision(d)).toString() : String(v)));
  const pct = (v) => (v === null || v === undefined ? "–" : `${Math.round(v)}%`);
  const usd = (v) => (v === null || v === undefined ? "–" : v < 1 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`);
  const duration = (s) => {
    s = Math.floor(s || 0);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
    return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  };
  const colors = {ok: "#2a9d8f", pending: "#adb5bd", invalid_edit: "#e9c46a", syntax_error: "#f4a261", runtime_error: "#e76f51", timeout: "#9b5de5", invalid: "#d62828", duplicate: "#8d99ae", rejected: "#6c757d", sandbox_error: "#000000",
    running: "#198754", finished: "#1d3557", stopped: "#6c757d", interrupted: "#e76f51", failed: "#d62828"};
  // Control and invisible format characters (a bidi override reorders a line as shown:
  // "Trojan Source") are shown as their escapes, as evolve/inert.py's UNSAFE does.
  const UNSAFE = /\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u{110bd}\u{110cd}\u{13430}-\u{1343f}\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0001}\u{e0020}-\u{e007f}\ud800-\udfff]/gu;
  const visible = (s) => String(s).replace(UNSAFE, (c) => {
    if (c === "\r\n") return "\n";
    const cp = c.codePointAt(0);
    const hex = cp.toString(16);
    return cp < 0x100 ? `\\x${hex.padStart(2, "0")}` : cp < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
  });
  const el = (tag, attrs = {}, text = null) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== null) e.textContent = visible(text);
    return e;
  };
  const badge = (status) => {
    const b = el("span", {class: `badge s-${status}`}, status);
    b.style.setProperty("--c", colors[status] || "#444");
    return b;
  };
  const link = (href, text, attrs = {}) => el("a", {href, ...attrs}, text);
  const progHref = (id) => `/programs/${encodeURIComponent(id)}`;
  const getJSON = async (url) => {
    const r = await fetch(url, {cache: "no-store"});
    if (!r.ok) throw new Error(`${url}: ${r.status}`);
    return r.json();
  };
  const setCell = (root, key, node) => {
    const cell = root.querySelector(`[data-k="${key}"]`);
    if (!cell) return;
    cell.replaceChildren(...(Array.isArray(node) ? node : [node]));
  };
  // Plotly (4.6 MB) is fetched after the page has painted, so tables and figures show at
  // once and the charts follow; each chart is drawn in its own task.
  let plotly = null;
  const loadPlotly = () => {
    plotly = plotly || new Promise((resolve, reject) => {
      const s = el("script", {src: "/static/plotly.min.js"});
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => reject(new Error("plotly.min.js did not load"));
      document.head.appendChild(s);
    });
    return plotly;
  };
  const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
  const plot = async (id, fig, responsive = true) => {
    const div = document.getElementById(id);
    if (!div) return;
    await loadPlotly();
    await nextTask();
    await Plotly.react(div, fig.data, fig.layout, {responsive, displaylogo: false});
    div.dataset.drawn = "1";
    if (!div.dataset.clicks) {
      div.dataset.clicks = "1";
      div.on("plotly_click", (ev) => {
        const id = ev.points && ev.points[0] && ev.points[0].customdata;
        if (typeof id === "string") window.location.href = progHref(id);
      });
    }
  };
  const drawRun = async (figs) => {
    await plot("chart-score", figs.score);
    await plot("chart-status", figs.status);
    await plot("chart-usage", figs.usage);
    await plot("chart-latency", figs.latency);
    if (figs.calls) await plot("chart-calls", figs.calls);
    const grids = document.getElementById("grids");
    if (!grids) return;
    while (grids.children.length < figs.grids.length) grids.appendChild(el("div", {id: `grid-${grids.children.length}`, class: "chart small"}));
    for (const [i, g] of figs.grids.entries()) await plot(`grid-${i}`, g);
    document.body.dataset.chartsDrawn = String(performance.now());
  };
  const afterPaint = (fn) => window.addEventListener("load", () => requestAnimationFrame(() => setTimeout(fn, 0)));
  const runFigures = (root, r) => {
    setCell(root, "status", badge(r.status));
    setCell(root, "iterations", document.createTextNode(r.progress));
    setCell(root, "best_score", r.best_program_id ? link(progHref(r.best_program_id), fmt(r.best_score), root.id === "run-figures" ? {id: "best-link"} : {}) : document.createTextNode("–"));
    setCell(root, "best_test_score", document.createTextNode(fmt(r.best_test_score)));
    setCell(root, "seed_score", r.seed_program_id ? link(progHref(r.seed_program_id), fmt(r.seed_score)) : document.createTextNode("–"));
    if (root.id === "run-figures") setCell(document, "llm_calls", document.createTextNode(String(r.llm_calls)));  // in the line under the cards
    setCell(root, "valid_pct", document.createTextNode(pct(r.valid_pct)));
    setCell(root, "tokens", document.createTextNode(r.tokens.toLocaleString("en-US")));
    setCell(root, "cost_usd", document.createTextNode(usd(r.cost_usd)));
    setCell(root, "duration", document.createTextNode(duration(r.duration_s)));
  };
  const active = (status) => status === "running" || status === "interrupted";
  // The run page's Search section from /api/runs/RUN's `search`: notes are model text,
  // so every value goes in with textContent (el) or as an attribute, never as HTML.
  let lastSearch = null;
  const span = (cls, text) => el("span", {class: cls}, text);
  const row = (cells, attrs = {}) => {
    const tr = el("tr", attrs);
    for (const [c, cls, tag] of cells) {
      const td = el(tag || "td", cls ? {class: cls} : {});
      td.append(...(Array.isArray(c) ? c : [c]).map((x) => (typeof x === "string" ? visible(x) : x)));
      tr.appendChild(td);
    }
    return tr;
  };
  const decisionItem = (d) => {
    const li = el("li", {"data-kind": d.kind});
    li.append(span("it", `after ${d.at_done} iterations`), " ");
    const det = d.detail || {};
    if (d.kind === "stagnation") {
      li.append(span("tag stagnation", "stagnation"), ` no new best in ${fmt(det.after)} iterations: ${fmt(det.calls)} calls on `, el("b", {}, String(det.model)));
      if (det.island !== null && det.island !== undefined && det.from) {
        li.append(`; island ${det.island} restarted from `, link(progHref(String(det.from)), String(det.from), {class: "pid"}));
      }
      li.append(".");
    } else {
      li.append(span("tag", d.kind), " ", el("code", {}, JSON.stringify(det)));
    }
    return li;
  };
  const renderSearch = (s) => {
    const key = JSON.stringify(s);
    if (!s || key === lastSearch || !document.getElementById("search")) return;
    lastSearch = key;
    const breakdown = document.querySelector("#status-breakdown tbody");
    const rows = Object.entries(s.statuses).map(([st, n]) => row([[badge(st), "", "th"], [String(n), "n"]], {"data-status": st}));
    if (!rows.length) rows.push(row([["No candidate yet."]]));
    rows.push(row([[["rejected proposals ", span("why", "replies that repeated a program of the run; the model was asked again")], "", "th"], [String(s.rejected), "n"]], {class: "beside", "data-k": "rejected"}));
    rows.push(row([[["repairs ", span("why", `candidates made to fix a failed parent, shown its error; ${s.repairs_ok} scored`)], "", "th"], [String(s.repairs), "n"]], {class: "beside", "data-k": "repairs"}));
    breakdown.replaceChildren(...rows);
    const models = s.calls.by_model.map((m) => row([[m.model], [String(m.calls), "n"], [m.share === null ? "–" : pct(m.share * 100), "n"], [m.tokens.toLocaleString("en-US"), "n"], [usd(m.cost_usd), "n"], [String(m.rejected), "n"], [String(m.improved), "n"], [fmt(m.reward, 3), "n"]]));
    document.querySelector("#models tbody").replaceChildren(...(models.length ? models : [row([["No LLM call yet."]])]));
    const purposes = Object.entries(s.calls.by_purpose).map(([k, n]) => `${k} ${n}`).join(", ");
    document.getElementById("calls-by-purpose").textContent = `${s.calls.answered} answered calls${purposes ? ` (${purposes})` : ""}; ${s.calls.rejected} rejected, ${s.calls.failed} failed attempts.`;
    const notes = s.notes.map((n) => {
      const li = el("li");
      li.append(span("it", `after ${n.at_calls} calls${n.call_id === null ? "" : ` (call ${n.call_id})`}`), el("pre", {class: "message note"}, n.text));
      return li;
    });
    document.getElementById("meta-notes").replaceChildren(...(notes.length ? notes : [el("li", {class: "none meta"}, "None written (--meta-interval sets how often).")]));
    const decisions = s.decisions.map(decisionItem);
    document.getElementById("decisions").replaceChildren(...(decisions.length ? decisions : [el("li", {class: "none meta"}, "None taken.")]));
  };

  async function runPage() {
    const root = document.getElementById("run-figures");
    const runId = root.dataset.run;
    const api = `/api/runs/${encodeURIComponent(runId)}`;
    afterPaint(() => drawRun(JSON.parse(document.getElementById("figures-data").textContent)));
    let count = Number(root.dataset.count);
    let last = Math.max(-1, ...Array.from(document.querySelectorAll("#recent-table tbody tr[data-iteration]"), (tr) => Number(tr.dataset.iteration)));
    const note = document.getElementById("live-note");
    const tick = async () => {
      let status = root.dataset.status;
      try {
        const r = await getJSON(api);
        status = r.status;
        root.dataset.status = status;
        runFigures(root, r);
        renderSearch(r.search);
        if (r.programs !== count) {
          const fresh = await getJSON(`${api}/programs?after=${last}`);
          const body = document.querySelector("#recent-table tbody");
          for (const p of fresh) {
            const tr = el("tr", {"data-iteration": String(p.iteration)});
            const cells = [link(progHref(p.program_id), `#${p.iteration}`, {class: "pid", title: p.program_id}), badge(p.status), document.createTextNode(fmt(p.score)), document.createTextNode(p.kind)];
            cells.forEach((c, i) => { const td = el("td", i === 2 ? {class: "n"} : {}); td.appendChild(c); tr.appendChild(td); });
            body.prepend(tr);
            last = Math.max(last, p.iteration);
          }
          while (body.children.length > 50) body.lastElementChild.remove();
          count = r.programs;
          document.getElementById("program-count").textContent = String(count);
          await drawRun(await getJSON(`${api}/figures`));
        }
        note.textContent = active(status) ? `live: updated ${new Date().toLocaleTimeString()}` : "";
      } catch (e) {
        note.textContent = `live updates paused (${e.message})`;
      }
      setTimeout(tick, active(status) ? 2000 : 10000);
    };
    setTimeout(tick, 2000);
  }

  async function runsList() {
    const table = document.querySelector("#runs tbody");
    const tick = async () => {
      let anyActive = false;
      try {
        const runs = await getJSON("/api/runs");
        for (const r of runs) {
          anyActive = anyActive || active(r.status);
          let tr = table.querySelector(`tr[data-run="${CSS.escape(r.run_id)}"]`);
          if (!tr) {
            tr = el("tr", {"data-run": r.run_id});
            const keys = [null, null, "status", "iterations", "best_score", "best_test_score", null, "valid_pct", "tokens", "cost_usd", null, "duration"];
            keys.forEach((k, i) => tr.appendChild(el("td", k ? {"data-k": k, class: i >= 3 && i !== 10 ? "n" : ""} : {})));
            tr.children[0].appendChild(link(`/runs/${encodeURIComponent(r.run_id)}`, r.run_id, {class: "run-link"}));
            tr.children[1].appendChild(link(`/problems/${encodeURIComponent(r.problem)}`, r.problem));
            tr.children[6].textContent = fmt(r.seed_score);
            tr.children[10].textContent = new Date(r.created_at * 1000).toLocaleString();
            table.prepend(tr);
          }
          runFigures(tr, r);
        }
      } catch (e) { /* the next tick tries again */ }
      setTimeout(tick, anyActive ? 2000 : 10000);
    };
    setTimeout(tick, 2000);
  }

  function reloadWhilePending() {
    setTimeout(() => window.location.reload(), 3000);
  }

  const lineagePage = () => afterPaint(async () => {
    await plot("chart-lineage", JSON.parse(document.getElementById("lineage-data").textContent));
    document.body.dataset.chartsDrawn = String(performance.now());
  });

  const benchPage = () => afterPaint(async () => {
    await plot("chart-bench", JSON.parse(document.getElementById("bench-data").textContent));
    document.body.dataset.chartsDrawn = String(performance.now());
  });

  return {plot, runPage, runsList, lineagePage, benchPage, reloadWhilePending, visible};
})();
