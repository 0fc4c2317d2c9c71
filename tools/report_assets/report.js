// tf2ir report page: three linked graph panes (TF, IR, ONNX) laid out by dagre, only what is
// visible (closed groups are one box each), plus the summary header and the node panel.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const NODES = DATA.nodes, GRAPHS = DATA.graphs, S = DATA.summary;
  const VIEWS = ["tf", "ir", "onnx"];
  const TITLES = { tf: "TensorFlow", ir: "IR", onnx: "ONNX" };
  const FIRST_BUDGET = 36;     // boxes a pane opens groups up to, at first
  const MORE_BUDGET = 400;     // boxes "open more" opens groups up to (dagre slows down beyond)
  // Every string of DATA (model, node, op, attribute, scope and file names) reaches the DOM
  // through esc (element text and quoted attribute values) or textContent, never raw.
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

  // -- per graph: group tree, ancestors, counts ---------------------------------------------
  const meta = GRAPHS.map((g) => {
    const groups = g.groups || [];
    const kids = groups.map(() => []), members = groups.map(() => []);
    groups.forEach((gr, k) => { if (gr.parent >= 0) kids[gr.parent].push(k); });
    const chainOf = (k) => { const c = []; while (k >= 0) { c.push(k); k = groups[k].parent; } return c.reverse(); };
    const chains = groups.map((_, k) => chainOf(k));
    const count = groups.map(() => 0), bad = groups.map(() => false);
    for (const i of g.nodes) {
      const n = NODES[g.view][i];
      if (n.p >= 0) {
        members[n.p].push(i);
        for (const k of chains[n.p]) {
          count[k]++;
          if (/unsupported|failed|first/.test(n.cls || "")) bad[k] = true;
        }
      }
    }
    return { groups, kids, members, chains, count, bad };
  });

  // -- panes ---------------------------------------------------------------------------------
  const panes = {};
  for (const view of VIEWS) {
    const el = document.getElementById("pane-" + view);
    el.innerHTML = `<div class="bar"><b>${TITLES[view]}</b><span class="crumbs"></span>
      <button data-act="open" title="open the outer closed groups, up to ${MORE_BUDGET} boxes">open more</button><button data-act="close" title="close every group">close</button>
      <button data-act="const" title="show or hide the constants">consts</button><button data-act="fit" title="fit the graph into the pane">fit</button></div>
      <div class="canvas"><svg><g class="vp"></g></svg></div>`;
    panes[view] = { view, el, svg: el.querySelector("svg"), vp: el.querySelector(".vp"),
      graph: -1, open: {}, showConst: false, t: { x: 0, y: 0, k: 1 }, pos: {}, size: [0, 0] };
    el.querySelector(".bar").addEventListener("click", (ev) => barAction(panes[view], ev));
    panZoom(panes[view]);
  }
  const state = { sel: null, hl: { tf: new Set(), ir: new Set(), onnx: new Set() } };

  function openSet(pane) { return pane.open[pane.graph] || (pane.open[pane.graph] = new Set()); }

  function setGraph(pane, g) {
    if (pane.graph === g) return false;
    pane.graph = g;
    if (!pane.open[g]) { pane.open[g] = new Set(); firstOpen(pane); }
    return true;
  }

  // Open closed groups breadth first (outer ones first) while the pane shows at most
  // `budget` boxes: what the pane shows first, and what "open more" adds.
  function openUpTo(pane, budget) {
    const m = meta[pane.graph], open = openSet(pane), g = GRAPHS[pane.graph];
    const units = new Set();
    for (const i of g.nodes) if (visibleNode(pane, i)) units.add(unitOf(pane, i, m, open));
    let shown = units.size;
    let queue = m.groups.map((_, k) => k).filter((k) => m.groups[k].parent < 0);
    while (queue.length) {
      const next = [];
      for (const k of queue) {
        if (open.has(k)) { next.push(...m.kids[k]); continue; }
        if (!units.has("g" + k)) continue;   // hidden (constants only) or inside a closed group
        const extra = m.kids[k].length + m.members[k].filter((i) => visibleNode(pane, i)).length - 1;
        if (shown + extra > budget) continue;
        open.add(k); shown += extra; next.push(...m.kids[k]);
        for (const kid of m.kids[k]) units.add("g" + kid);
      }
      queue = next;
    }
  }
  function firstOpen(pane) { openUpTo(pane, FIRST_BUDGET); }

  function visibleNode(pane, i) {
    const n = NODES[pane.view][i];
    return pane.showConst || !/\bconst\b/.test(n.cls || "");
  }

  // The box a node is drawn in: itself, or its outermost closed group.
  function unitOf(pane, i, m, open) {
    const n = NODES[pane.view][i];
    if (n.p < 0) return "n" + i;
    for (const k of m.chains[n.p]) if (!open.has(k)) return "g" + k;
    return "n" + i;
  }

  function render(pane) {
    const g = GRAPHS[pane.graph], m = meta[pane.graph], open = openSet(pane), view = pane.view;
    const layout = new dagre.graphlib.Graph({ compound: true, multigraph: false });
    layout.setGraph({ rankdir: "TB", nodesep: 14, ranksep: 26, marginx: 16, marginy: 16 });
    layout.setDefaultEdgeLabel(() => ({}));
    const units = new Map(), unitOfNode = new Map();
    const cluster = (k) => {   // an open group drawn as a cluster around its visible boxes
      const key = "c" + k;
      if (!layout.hasNode(key)) {
        layout.setNode(key, { label: m.groups[k].label, paddingTop: 18 });
        const parent = m.groups[k].parent;
        if (parent >= 0) layout.setParent(key, cluster(parent));
      }
      return key;
    };
    for (const i of g.nodes) {
      if (!visibleNode(pane, i)) continue;
      const key = unitOf(pane, i, m, open);
      unitOfNode.set(i, key);
      if (units.has(key)) continue;
      let label, sub, parent;
      if (key[0] === "n") {
        const n = NODES[view][i];
        label = n.op; sub = shortName(n.n, view); parent = n.p;
      } else {
        const k = +key.slice(1);
        label = m.groups[k].label; sub = m.count[k] + " nodes"; parent = m.groups[k].parent;
      }
      const width = Math.min(260, Math.max(60, 6.2 * Math.max(label.length, sub.length * 0.85) + 16));
      units.set(key, { label, sub, width, height: 32 });
      layout.setNode(key, { width, height: 32 });
      if (parent >= 0) layout.setParent(key, cluster(parent));
    }
    const edges = new Map();
    for (const [a, b, text, fmt] of g.edges) {
      const ua = unitOfNode.get(a), ub = unitOfNode.get(b);
      if (!ua || !ub || ua === ub) continue;
      const key = ua + ">" + ub;
      if (!edges.has(key)) { edges.set(key, { a: ua, b: ub, text, fmt: fmt || "", ids: [] }); layout.setEdge(ua, ub); }
      edges.get(key).ids.push(a, b);
    }
    dagre.layout(layout);
    const parts = [];
    for (const key of layout.nodes()) {
      if (key[0] !== "c") continue;
      const c = layout.node(key), k = +key.slice(1), gr = m.groups[k];
      const x = c.x - c.width / 2, y = c.y - c.height / 2;
      parts.push(`<g class="grp open ${esc(gr.kind)}${m.bad[k] ? " bad" : ""}" data-g="${k}"><rect x="${x}" y="${y}" width="${c.width}" height="${c.height}"></rect>` +
        `<text x="${x + 6}" y="${y + 12}">▾ ${esc(clip(gr.label, c.width / 6.2))}</text><title>${esc(gr.label)} (${gr.kind}; click to close)</title></g>`);
    }
    for (const e of edges.values()) {
      const pts = layout.edge(e.a, e.b).points;
      const d = "M" + pts.map((p) => p.x.toFixed(1) + "," + p.y.toFixed(1)).join("L");
      parts.push(`<path class="edge" data-e="${esc(e.a + ">" + e.b)}" d="${d}"><title>${esc(e.text)}</title></path>`);
      if (e.fmt) {
        const mid = pts[Math.floor(pts.length / 2)];
        parts.push(`<text class="fmt" x="${mid.x + 3}" y="${mid.y}">${esc(e.fmt)}</text>`);
      }
    }
    pane.pos = {};
    for (const [key, u] of units) {
      const p = layout.node(key), x = p.x - u.width / 2, y = p.y - u.height / 2;
      pane.pos[key] = p;
      if (key[0] === "n") {
        const i = +key.slice(1), n = NODES[view][i];
        const fill = n.err !== undefined ? ` style="fill:${errColour(n.err)}"` : "";
        parts.push(`<g class="node ${esc(n.cls || "")}" id="${view}-n${i}" data-view="${view}" data-id="${i}" data-name="${esc(n.n)}">` +
          `<rect x="${x}" y="${y}" width="${u.width}" height="${u.height}"${fill}></rect>` +
          `<text x="${p.x}" y="${y + 13}" text-anchor="middle">${/first/.test(n.cls || "") ? "⚑ " : ""}${esc(clip(u.label, u.width / 6.2))}</text>` +
          `<text class="sub" x="${p.x}" y="${y + 26}" text-anchor="middle">${esc(clip(u.sub, u.width / 5.2))}</text><title>${esc(n.n)}</title></g>`);
      } else {
        const k = +key.slice(1), gr = m.groups[k];
        parts.push(`<g class="grp ${esc(gr.kind)}${m.bad[k] ? " bad" : ""}" id="${view}-g${k}" data-g="${k}">` +
          `<rect x="${x}" y="${y}" width="${u.width}" height="${u.height}"></rect>` +
          `<text x="${p.x}" y="${y + 13}" text-anchor="middle">▸ ${esc(clip(u.label, u.width / 6.2))}</text>` +
          `<text class="count" x="${p.x}" y="${y + 26}" text-anchor="middle">${esc(u.sub)}</text><title>${esc(gr.label)} (${gr.kind}; click to open)</title></g>`);
      }
    }
    pane.vp.innerHTML = parts.join("");
    const gl = layout.graph();
    pane.size = [gl.width || 0, gl.height || 0];
    pane.units = units; pane.unitOfNode = unitOfNode;
    crumbs(pane);
    applyHighlight(pane);
  }

  function shortName(name, view) {   // an ONNX node NODE/Op_node is named by its IR node
    const parts = name.split("/");
    const last = parts[parts.length - 1];
    return view === "onnx" && parts.length > 1 && /_node(_\d+)?$/.test(last) ? parts[parts.length - 2] : last;
  }
  function clip(text, chars) { chars = Math.max(4, Math.floor(chars)); return text.length > chars ? text.slice(0, chars - 1) + "…" : text; }
  function errColour(rel) {   // green (1e-8 and less) to red (1 and more), log scale
    const t = Math.max(0, Math.min(1, (Math.log10(Math.max(rel, 1e-12)) + 8) / 8));
    return `hsl(${Math.round(120 * (1 - t))},75%,78%)`;
  }

  function crumbs(pane) {
    const chain = [];
    for (let g = pane.graph; g !== null && g !== undefined && g >= 0; g = GRAPHS[g].parent) chain.unshift(g);
    pane.el.querySelector(".crumbs").innerHTML = chain.map((g) =>
      `<a data-graph="${g}">${esc(GRAPHS[g].title)}</a>`).join(" › ");
  }

  // -- view transform --------------------------------------------------------------------
  function applyTransform(pane) {
    const t = pane.t;
    pane.vp.setAttribute("transform", `translate(${t.x},${t.y}) scale(${t.k})`);
  }
  function fit(pane) {
    const box = pane.svg.getBoundingClientRect();
    const [w, h] = pane.size;
    const k = Math.max(0.25, Math.min(1, box.width / (w || 1), box.height / (h || 1)));
    pane.t = { k, x: Math.max(0, (box.width - w * k) / 2), y: 4 };
    applyTransform(pane);
  }
  function centre(pane, key) {
    const p = pane.pos[key];
    if (!p) return;
    const box = pane.svg.getBoundingClientRect();
    pane.t.x = box.width / 2 - p.x * pane.t.k;
    pane.t.y = box.height / 2 - p.y * pane.t.k;
    applyTransform(pane);
  }
  function panZoom(pane) {
    let drag = null, moved = false;
    pane.svg.addEventListener("mousedown", (ev) => { drag = [ev.clientX, ev.clientY, pane.t.x, pane.t.y]; moved = false; });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      if (Math.abs(ev.clientX - drag[0]) + Math.abs(ev.clientY - drag[1]) > 3) moved = true;
      pane.t.x = drag[2] + ev.clientX - drag[0]; pane.t.y = drag[3] + ev.clientY - drag[1];
      applyTransform(pane);
    });
    window.addEventListener("mouseup", () => { drag = null; });
    pane.svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const box = pane.svg.getBoundingClientRect(), t = pane.t;
      const k = Math.max(0.05, Math.min(4, t.k * Math.exp(-ev.deltaY * 0.0015)));
      const mx = ev.clientX - box.left, my = ev.clientY - box.top;
      t.x = mx - (mx - t.x) * k / t.k; t.y = my - (my - t.y) * k / t.k; t.k = k;
      applyTransform(pane);
    }, { passive: false });
    pane.svg.addEventListener("click", (ev) => {
      if (moved) return;
      const node = ev.target.closest(".node"), grp = ev.target.closest(".grp");
      if (node) select(pane.view, +node.dataset.id);
      else if (grp) toggle(pane, +grp.dataset.g);
    });
  }

  function toggle(pane, k) {
    const open = openSet(pane);
    if (open.has(k)) {   // closing: its open subgroups close too
      const stack = [k];
      while (stack.length) { const j = stack.pop(); open.delete(j); stack.push(...meta[pane.graph].kids[j]); }
    } else open.add(k);
    render(pane);
  }

  function barAction(pane, ev) {
    const a = ev.target.closest("a"), b = ev.target.closest("button");
    if (a && a.dataset.graph !== undefined) { showGraph(pane.view, +a.dataset.graph); return; }
    if (!b || pane.graph < 0) return;   // no graph in this pane (the conversion stopped before)
    const m = meta[pane.graph], open = openSet(pane);
    if (b.dataset.act === "open") openUpTo(pane, MORE_BUDGET);
    if (b.dataset.act === "close") open.clear();
    if (b.dataset.act === "const") pane.showConst = !pane.showConst;
    if (b.dataset.act !== "fit") render(pane);
    fit(pane);
  }

  // A graph in its pane, and its paired graph (TF ↔ IR) in the other.
  function showGraph(view, g) {
    const pane = panes[view];
    if (setGraph(pane, g)) { render(pane); fit(pane); }
    const pair = GRAPHS[g].pair;
    if (pair !== undefined && pair !== null) {
      const other = panes[GRAPHS[pair].view];
      if (setGraph(other, pair)) { render(other); fit(other); }
    }
  }

  // -- selection and links ---------------------------------------------------------------
  function select(view, i) {
    const n = NODES[view][i];
    state.sel = { view, i };
    for (const v of VIEWS) state.hl[v] = new Set(v === view ? [i] : (n[v] || []));
    for (const v of VIEWS) {
      const pane = panes[v], ids = [...state.hl[v]];
      if (!ids.length) { applyHighlight(pane); continue; }
      let changed = false;
      if (!GRAPHS[pane.graph].nodes.includes(ids[0])) changed = setGraph(pane, NODES[v][ids[0]].g) || changed;
      const m = meta[pane.graph], open = openSet(pane);
      for (const id of ids) {   // open the groups that hide a linked node
        const node = NODES[v][id];
        if (node.g !== pane.graph) continue;
        if (!visibleNode(pane, id)) { pane.showConst = true; changed = true; }
        if (node.p >= 0) for (const k of m.chains[node.p]) if (!open.has(k)) { open.add(k); changed = true; }
      }
      if (changed) { render(pane); pane.t.k = Math.max(pane.t.k, 0.9); } else applyHighlight(pane);
      if (v !== view || changed) centre(pane, "n" + ids[0]);
    }
    showPanel(view, i);
  }

  function applyHighlight(pane) {
    const v = pane.view, hl = state.hl[v];
    for (const el of pane.vp.querySelectorAll(".hl, .sel")) el.classList.remove("hl", "sel");
    for (const i of hl) {
      const el = document.getElementById(`${v}-n${i}`);
      if (el) { el.classList.add(state.sel && state.sel.view === v ? "sel" : "hl"); continue; }
      const key = pane.unitOfNode && pane.unitOfNode.get(i);
      const box = key && document.getElementById(`${v}-${key}`);
      if (box) box.classList.add("hl");
    }
  }

  function showPanel(view, i) {
    const n = NODES[view][i];
    const rows = [["view", TITLES[view] + " · " + GRAPHS[n.g].title], ["op type", n.op]];
    const parts = [`<h2>${esc(n.n)}</h2>`];
    for (const [k, v] of Object.entries(n.d || {})) if (typeof v === "string") rows.push([k, v]);
    parts.push("<table>" + rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join("") + "</table>");
    for (const [k, v] of Object.entries(n.d || {})) {
      if (typeof v === "string") continue;
      const items = Array.isArray(v) ? v.map((x) => esc(x)) : Object.entries(v).map(([a, b]) => `<b>${esc(a)}</b> = ${esc(b)}`);
      if (items.length) parts.push(`<div><b>${esc(k)}</b><ul>${items.map((x) => `<li>${x}</li>`).join("")}</ul></div>`);
    }
    for (const v of VIEWS) {
      if (v === view || !(n[v] || []).length) continue;
      parts.push(`<div><b>${TITLES[v]} nodes</b><ul>` + n[v].slice(0, 60).map((j) =>
        `<li><a data-view="${v}" data-id="${esc(j)}">${esc(NODES[v][j].op)} ${esc(NODES[v][j].n)}</a></li>`).join("") +
        (n[v].length > 60 ? `<li>… ${n[v].length - 60} more</li>` : "") + "</ul></div>");
    }
    for (const [key, g] of n.sub || []) parts.push(`<div><a data-graph="${esc(g)}" data-gview="${esc(GRAPHS[g].view)}">open ${esc(key)} ›</a></div>`);
    document.getElementById("panel").innerHTML = parts.join("");
  }

  document.getElementById("panel").addEventListener("click", (ev) => {
    const a = ev.target.closest("a");
    if (!a) return;
    if (a.dataset.graph !== undefined) showGraph(a.dataset.gview, +a.dataset.graph);
    else if (a.dataset.view) select(a.dataset.view, +a.dataset.id);
  });

  // -- the summary header ------------------------------------------------------------------
  function summary() {
    const ok = S.status === "ok" && !(S.verify && S.verify.first);
    const table = (head, rows) => rows.length ? `<table><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr>` +
      rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("") + "</table>" : "";
    const n = (x) => x === null || x === undefined ? "–" : x;
    const delta = (x) => x > 0 ? "−" + x : x < 0 ? "+" + (-x) : "0";   // nodes removed (−) or added (+)
    const parts = [`<h1>${esc(S.model)} <span class="${ok ? "status-ok" : "status-bad"}">${esc(S.status)}</span>
      <small>tf2ir ${esc(S.version)} · ${esc(S.date)}</small>
      <input id="search" type="search" placeholder="find a node by name (Enter: next)" size="34"></h1>`];
    if (S.error) parts.push(`<div class="error">${esc(S.error)}</div>`);
    parts.push(`<div class="legend">boxes: <span style="border-color:#d00;background:#ffd9d9">unsupported / failed</span>` +
      `<span style="border-color:#7a3db8;background:#f5edfc">scope fusion</span><span style="border-color:#d98200;background:#fff1dc">fallback: TF runs it</span>` +
      `<span style="border-color:#4b8b47;background:#eaf7e9">input</span><span style="opacity:.5;border-style:dashed">pruned / not converted</span>` +
      `<span style="border-color:#ff8c00;border-width:2px">linked to the selection</span> · edges: dtype[shape] on hover, formats (NHWC, NCHW, HWCN) written</div>`);
    parts.push(table(["TF nodes", "kept", "IR nodes", "ONNX nodes"], [[n(S.tf_nodes), n(S.kept), n(S.ir_nodes), n(S.onnx_nodes)]]));
    parts.push(table(["phase", "s"], Object.entries(S.phases).map(([k, v]) => [esc(k), v.toFixed(3)])));
    parts.push(table(["fusion", "matches", "nodes"], S.fusions.map((f) => [esc(f.name), esc(f.matches), delta(f.removed)])));
    const idle = S.passes.filter((p) => !p.rewrites && !p.removed).map((p) => esc(p.name));
    parts.push(table(["pass", "kind", "rewrites", "nodes", "s"], S.passes.filter((p) => p.rewrites || p.removed).map((p) =>
      [esc(p.name), esc(p.kind), esc(p.rewrites), delta(p.removed), p.seconds.toFixed(3)]).concat(idle.length ?
      [[`<span title="${idle.join(", ")}">${idle.length} more: no change</span>`, "", "", "", ""]] : [])));
    const link = (op, nodes) => nodes.length ? `<a data-view="tf" data-id="${esc(nodes[0])}">${esc(op)}</a>` : esc(op);
    parts.push(table(["unsupported op type", "nodes", "e.g."], S.unsupported.map((u) => [link(u.op, u.nodes), esc(u.count), esc(u.example)])));
    parts.push(table(["failed op type", "nodes", "error"], S.failures.map((u) => [link(u.op, u.nodes), esc(u.count), esc(u.message)])));
    parts.push(table(["fallback segment", "nodes", "op types"], S.segments.map((s) => [esc(s.name), esc(s.nodes),
      esc(Object.entries(s.op_types).map(([k, v]) => k + " " + v).join(", "))])));
    parts.push(table(["plugin", "nodes mapped"], Object.entries(S.plugins).map(([k, v]) => [esc(k), esc(v)])));
    if (S.overrides.length) parts.push(table(["override"], S.overrides.map((o) => [esc(o)])));
    if (S.verify) {
      const v = S.verify;
      parts.push(table(["output", "shape", "max abs err", "max rel err", "ok"], v.outputs.map((o) =>
        [esc(o.name), esc(JSON.stringify(o.shape)), o.abs.toExponential(2), o.rel.toExponential(2), o.ok ? "yes" : "<b>NO</b>"])));
      parts.push(`<div class="legend">error vs TF (max rel, rtol ${esc(v.rtol)}, atol ${esc(v.atol)}, seed ${esc(v.seed)}): ` +
        ["1e-8", "1e-6", "1e-4", "1e-2", "1"].map((x) => `<span style="background:${errColour(+x)}">${x}</span>`).join("") +
        (v.first_id !== undefined ? ` first diverging node: <a data-view="tf" data-id="${esc(v.first_id)}">⚑ ${esc(v.first)}</a>`
          : v.first ? ` first diverging node: ${esc(v.first)}` : " no node diverges") + (v.note ? " · " + esc(v.note) : "") + "</div>");
    }
    const head = document.getElementById("summary");
    head.innerHTML = parts.join("");
    let found = [], at = -1, last = "";
    document.getElementById("search").addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      const text = ev.target.value.trim();
      if (!text) return;
      if (text !== last) {   // TF nodes first, then IR, then ONNX
        found = [];
        for (const v of VIEWS) NODES[v].forEach((n, i) => { if (n.n.includes(text)) found.push([v, i]); });
        at = -1; last = text;
      }
      if (!found.length) { ev.target.style.background = "#fdd"; return; }
      ev.target.style.background = "";
      at = (at + 1) % found.length;
      select(found[at][0], found[at][1]);
    });
    head.addEventListener("click", (ev) => {
      const a = ev.target.closest("a");
      if (a && a.dataset.view) select(a.dataset.view, +a.dataset.id);
    });
  }

  // -- start ---------------------------------------------------------------------------------
  summary();
  const firstOf = (view) => GRAPHS.findIndex((g) => g.view === view && (g.parent === null || g.parent === undefined));
  for (const view of VIEWS) {
    const g = firstOf(view);
    const pane = panes[view];
    if (g < 0) { pane.vp.innerHTML = `<text x="12" y="24">(no ${TITLES[view]} graph: the conversion stopped before)</text>`; continue; }
    setGraph(pane, g); render(pane); fit(pane);
  }
  window.tf2irReport = { select, panes, state, showGraph, centre,
    find: (view, name) => NODES[view].findIndex((n) => n.n === name) };
  window.tf2irDrawn = performance.now();   // the page's script is done; the first frame follows
  requestAnimationFrame(() => setTimeout(() => { window.tf2irReady = performance.now(); }, 0));
})();
