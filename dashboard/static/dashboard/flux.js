/* Flux Memory dashboard: data access, the live socket, the grain dossier and the WebGL graph view.
 * Every view loads this file; it reads only from the dashboard's own host. */
(function () {
  "use strict";
  const Flux = (window.Flux = {});
  const GraphClass = window.graphology.Graph || window.graphology;

  // --- data ---------------------------------------------------------------------------------------------
  Flux.api = async function (path, params) {
    const url = new URL(path, window.location.origin);
    Object.entries(params || {}).forEach(([k, v]) => v !== undefined && v !== null && url.searchParams.set(k, v));
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    const body = await response.json();
    if (!response.ok) throw new Error((body.error && body.error.message) || response.statusText);
    return body;
  };

  Flux.el = function (tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (k === "on") Object.entries(v).forEach(([type, fn]) => node.addEventListener(type, fn));
      else if (v !== undefined && v !== null) node.setAttribute(k, v);
    });
    // Lists of lists too (a <dl>'s [dt, dd] pairs): one level showed "[object HTMLElement],..." in their place.
    children.flat(Infinity).forEach((c) => c !== null && c !== undefined && node.append(c instanceof Node ? c : String(c)));
    return node;
  };

  Flux.when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
  Flux.round = (x, digits = 3) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits));

  // --- colours ------------------------------------------------------------------------------------------
  function hsl(h, s, l) {
    const f = (n) => {
      const k = (n + h / 30) % 12;
      const c = l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
      return Math.round(255 * c).toString(16).padStart(2, "0");
    };
    return "#" + f(0) + f(8) + f(4);
  }
  Flux.colour = {
    cluster: (id) => (id ? hsl((id * 137.508) % 360, 0.62, 0.52) : "#9aa3b2"),
    status: (s) => ({ active: "#2f8f5b", dormant: "#8a93a5", quarantined: "#c0392b", archived: "#c8ccd4" })[s] || "#555",
    kind: (k) => ({ association: "#b7bfcc", shortcut: "#e3a500", supports: "#2f8f5b", contradicts: "#c0392b",
                    supersedes: "#7b4fc9", caused_by: "#2a7fc9", abstracts: "#17a2a2", between: "#c9ced8" })[k] || "#b7bfcc",
    beam: "#ff5a36",
    heat: "#ff9f1a",
  };

  // --- live updates: a snapshot on connect, then deltas; reconnects resume from the last event id ---------
  const SHOWN_MAX = 10000;
  Flux.live = function ({ onSnapshot, onEvents, after = null }) {
    const badge = document.getElementById("live");
    let lastId = after;
    // Ids passed on, the newest SHOWN_MAX: an event whose transaction committed after a higher id's comes later
    // and below lastId (the server sends each id once a connection; on reconnecting it resumes above lastId).
    const shown = new Set();
    let delay = 500;
    function connect() {
      const scheme = window.location.protocol === "https:" ? "wss" : "ws";
      const query = lastId === null ? "" : `?after=${lastId}`;
      const socket = new WebSocket(`${scheme}://${window.location.host}/ws/activity${query}`);
      socket.onopen = () => { delay = 500; badge.className = "live on"; badge.textContent = "live"; };
      socket.onmessage = (message) => {
        const data = JSON.parse(message.data);
        if (data.type === "snapshot") {
          if (lastId === null) lastId = data.last_event_id;
          if (onSnapshot) onSnapshot(data);
        } else if (data.type === "delta") {
          const fresh = data.events.filter((e) => !shown.has(e.id));
          if (fresh.length) {
            fresh.forEach((e) => shown.add(e.id));
            for (const id of shown) {
              if (shown.size <= SHOWN_MAX) break;
              shown.delete(id);  // the oldest passed on first
            }
            lastId = Math.max(lastId ?? 0, ...fresh.map((e) => e.id));
            document.body.dataset.lastEvent = lastId;
            if (onEvents) onEvents(fresh);
          }
        }
      };
      socket.onclose = () => {
        badge.className = "live off"; badge.textContent = "reconnecting";
        setTimeout(connect, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    connect();
  };

  // --- the dossier of one grain ---------------------------------------------------------------------------
  const dossier = document.getElementById("dossier");
  const dossierBody = document.getElementById("dossier-body");
  if (dossier) document.getElementById("dossier-close").addEventListener("click", () => { dossier.hidden = true; });

  function sparkline(values) {
    if (values.length < 2) return document.createDocumentFragment();  // nothing to draw (null was shown as "null")
    const w = 240, h = 40;
    const points = values.map((v, i) => `${(i / (values.length - 1)) * w},${h - v * h}`).join(" ");
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.setAttribute("width", w); svg.setAttribute("height", h);
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", points); line.setAttribute("fill", "none"); line.setAttribute("stroke", "#2456c9");
    svg.append(line);
    return svg;
  }

  Flux.openDossier = async function (grainId) {
    const el = Flux.el;
    dossier.hidden = false;
    dossierBody.replaceChildren(el("p", {}, "Loading grain ", grainId, "…"));
    let g;
    try {
      g = await Flux.api(`/api/grains/${grainId}`);
    } catch (error) {
      dossierBody.replaceChildren(el("p", {}, String(error.message)));
      return;
    }
    const link = (id) => el("a", { on: { click: () => Flux.openDossier(id) } }, `#${id}`);
    const facts = [["id", g.id], ["status", g.status], ["tier", g.tier], ["provenance", g.provenance],
      ["confidence", Flux.round(g.confidence)], ["weight", Flux.round(g.weight)], ["level", g.level],
      ["cluster", g.cluster_id ?? "—"], ["retrievals", g.retrievals], ["useful / not", `${g.useful_count} / ${g.not_useful_count}`],
      ["context", g.context || "—"], ["stored", Flux.when(g.created_at)], ["last used", Flux.when(g.last_accessed_at)]];
    if (g.superseded_by) facts.push(["superseded by", link(g.superseded_by)]);
    dossierBody.replaceChildren(
      el("h2", { id: "dossier-title", "data-grain": g.id }, g.content),
      el("dl", {}, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
      el("h3", {}, "Confidence history"),
      sparkline(g.confidence_history.map((e) => e.confidence)),
      el("ul", {}, g.confidence_history.slice(-12).map((e) =>
        el("li", {}, Flux.round(e.confidence), " · ", e.reason, e.caller_name ? ` · ${e.caller_name}` : "",
           e.related_grain_id ? [" · ", link(e.related_grain_id)] : "", " · ", Flux.when(e.created_at)))),
      el("h3", {}, `Conduits (${g.conduits.length})`),
      el("ul", {}, g.conduits.slice(0, 30).map((c) =>
        el("li", {}, c.kind, " ", c.direction === "out" ? "→ " : "← ", link(c.other_grain_id), " · weight ",
           Flux.round(c.weight), ` · used ${c.uses}`, c.note ? ` · ${c.note}` : ""))),
      el("h3", {}, `Traces (${g.traces.length})`),
      el("ul", {}, g.traces.slice(0, 20).map((t) =>
        el("li", {}, `“${t.query}” rank ${t.rank}, ${t.hops} hop(s)`,
           t.useful === true ? " · useful" : t.useful === false ? " · not useful" : " · unrated", " · ", Flux.when(t.created_at)))),
    );
  };

  // --- the graph view -------------------------------------------------------------------------------------
  const STYLES = {
    graph: {
      node: (a, view) => ({ size: a.role === "cluster" ? Math.min(40, 4 + 1.6 * Math.sqrt(a.members)) : 2.5 + 5 * Math.sqrt(Math.min(a.weight, 1)),
                            color: view.colourBy === "status" && a.role === "grain" ? Flux.colour.status(a.status) : Flux.colour.cluster(a.cluster) }),
      edge: (a) => ({ size: a.kind === "between" ? Math.min(6, 0.5 + Math.log1p(a.count) / 2) : 0.4 + 2.2 * a.weight,
                      color: Flux.colour.kind(a.kind) }),
      labelColor: "#1d2330",
    },
    mycelium: {
      node: (a) => ({ size: a.role === "cluster" ? Math.min(30, 3 + Math.sqrt(a.members)) : 1.6 + 1.5 * Math.min(a.weight, 1),
                      color: a.role === "cluster" ? Flux.colour.cluster(a.cluster) : "#5f7390" }),
      edge: (a) => {
        const w = Math.max(0, Math.min(1, a.weight));
        if (a.kind === "shortcut") return { size: 1 + 4 * w, color: "#ffcc33" };
        if (w >= 0.6) return { size: 1 + 6 * Math.pow(w, 1.5), color: "#7ee787" };
        return { size: 0.3 + 2.5 * w, color: `rgba(110,140,170,${(0.15 + 0.6 * w).toFixed(2)})` };
      },
      labelColor: "#c9d1d9",
    },
  };

  class GraphView {
    constructor(container, { style = "graph", hulls = false, onGrainClick } = {}) {
      this.container = container;
      this.style = STYLES[style];
      this.colourBy = "cluster";
      this.graph = new GraphClass({ multi: true, type: "mixed" });
      this.clusters = new Map();
      this.expanded = new Set();
      this.highlight = new Map(); // node key -> expiry time
      this.heat = new Map(); // node key -> heat in [0, 1]
      this.beamEdges = new Set();
      this.onGrainClick = onGrainClick || ((id) => Flux.openDossier(id));
      this.hullCanvas = hulls ? container.appendChild(Flux.el("canvas", { class: "hulls" })) : null;
    }

    async load() {
      const data = await Flux.api("/api/graph");
      this.mode = data.mode;
      data.clusters.forEach((c) => this.clusters.set(c.id, c));
      data.nodes.forEach((n) => this.addNode(n));
      data.edges.forEach((e) => this.addEdge(e));
      this.renderer = new window.Sigma(this.graph, this.container, {
        labelColor: { color: this.style.labelColor }, labelRenderedSizeThreshold: 9, zIndex: true,
        defaultEdgeType: "line", allowInvalidContainer: true,
        nodeReducer: (key, attrs) => this.reduceNode(key, attrs),
        edgeReducer: (key, attrs) => this.reduceEdge(key, attrs),
      });
      this.renderer.on("clickNode", ({ node }) => this.click(node));
      this.renderer.getCamera().on("updated", () => this.zoomed());
      if (this.hullCanvas) this.renderer.on("afterRender", () => this.drawHulls());
      const drawn = new Promise((resolve) => this.renderer.once("afterRender", resolve));
      this.renderer.refresh();
      await drawn;
      this.container.dataset.nodes = this.graph.order;
      this.container.dataset.mode = this.mode;
      document.body.dataset.ready = "1";
      window.fluxFirstRender = performance.now();
      return data;
    }

    addNode(n) {
      if (this.graph.hasNode(n.key)) return this.graph.mergeNodeAttributes(n.key, n);
      const look = this.style.node(n, this);
      this.graph.addNode(n.key, { ...n, ...look, cluster: n.role === "cluster" ? n.id : n.cluster,
                                   label: n.role === "cluster" ? `${n.label} (${n.members})` : n.label });
    }

    addEdge(e) {
      if (this.graph.hasEdge(e.key) || !this.graph.hasNode(e.source) || !this.graph.hasNode(e.target)) return;
      this.graph.addEdgeWithKey(e.key, e.source, e.target, { ...e, ...this.style.edge(e) });
    }

    restyle() {
      this.graph.forEachNode((key, a) => this.graph.mergeNodeAttributes(key, this.style.node(a, this)));
    }

    click(key) {
      const a = this.graph.getNodeAttributes(key);
      if (a.role === "cluster") this.expand(a.id);
      else this.onGrainClick(a.id);
    }

    /** Members of a cluster replace its node (level of detail). */
    async expand(clusterId) {
      if (this.expanded.has(clusterId)) return;
      this.expanded.add(clusterId);
      const data = await Flux.api(`/api/graph/clusters/${clusterId}`);
      data.nodes.forEach((n) => this.addNode(n));
      data.edges.forEach((e) => this.addEdge(e));
      const key = `c${clusterId}`;
      if (this.graph.hasNode(key)) this.graph.setNodeAttribute(key, "hidden", true);
      this.container.dataset.nodes = this.graph.order;
      this.container.dataset.expanded = [...this.expanded].join(",");
    }

    /** Zoomed in far enough on a cluster overview: open the clusters nearest the centre of the view. */
    zoomed() {
      if (this.mode !== "clusters") return;
      clearTimeout(this.zoomTimer);
      this.zoomTimer = setTimeout(() => {
        if (this.renderer.getCamera().ratio > 0.45) return;
        const { width, height } = this.renderer.getDimensions();
        const near = [];
        this.clusters.forEach((c) => {
          if (this.expanded.has(c.id)) return;
          const p = this.renderer.graphToViewport({ x: c.x, y: c.y });
          if (p.x > -50 && p.x < width + 50 && p.y > -50 && p.y < height + 50)
            near.push([Math.hypot(p.x - width / 2, p.y - height / 2), c.id]);
        });
        near.sort((a, b) => a[0] - b[0]).slice(0, 3).forEach(([, id]) => this.expand(id));
      }, 250);
    }

    /** A grain that arrived live: placed in its cluster's disc, or beside the graph if it has none yet. */
    addGrain(g) {
      const disc = this.clusters.get(g.cluster);
      let x, y;
      if (disc) {
        const r = disc.radius * Math.sqrt(Math.random()), t = Math.random() * 2 * Math.PI;
        x = disc.x + r * Math.cos(t); y = disc.y + r * Math.sin(t);
      } else {
        const extent = this.graph.order ? Math.sqrt(this.graph.order) * 2 : 1;
        x = extent + Math.random() * 4; y = (Math.random() - 0.5) * extent;
      }
      this.addNode({ ...g, role: "grain", x, y });
      this.container.dataset.nodes = this.graph.order;
    }

    flash(keys, ms = 4000) {
      const until = performance.now() + ms;
      keys.forEach((k) => this.graph.hasNode(k) && this.highlight.set(k, until));
      this.refreshSoon(ms);
    }

    /** The search beam of a retrieval: its entry grains, the grains the signal reached and the conduits it took. */
    beam(trace, ms = 5000) {
      const keys = new Set();
      this.beamEdges = new Set();
      trace.items.forEach((item) => {
        item.path.forEach((gid) => keys.add(`g${gid}`));
        keys.add(`g${item.grain_id}`);
        item.conduits.forEach((cid) => this.beamEdges.add(`e${cid}`));
      });
      keys.forEach((k) => this.heat.set(k, Math.min(1, (this.heat.get(k) || 0) + 0.35)));
      this.flash([...keys], ms);
      setTimeout(() => { this.beamEdges = new Set(); this.renderer && this.renderer.refresh(); }, ms);
    }

    cool(factor = 0.9) {
      this.heat.forEach((v, k) => (v * factor < 0.03 ? this.heat.delete(k) : this.heat.set(k, v * factor)));
    }

    refreshSoon(ms) {
      if (!this.renderer) return;
      this.renderer.refresh();
      setTimeout(() => this.renderer.refresh(), ms + 50);
    }

    reduceNode(key, attrs) {
      const out = { ...attrs };
      const lit = this.highlight.get(key);
      if (lit && lit > performance.now()) {
        out.color = Flux.colour.beam; out.size = attrs.size * 1.8; out.forceLabel = true; out.zIndex = 2;
      } else if (this.heat.has(key)) {
        out.color = Flux.colour.heat; out.size = attrs.size * (1 + this.heat.get(key));
      }
      if (this.hidden && this.hidden.has(key)) out.hidden = true;
      return out;
    }

    reduceEdge(key, attrs) {
      if (this.beamEdges.has(key)) return { ...attrs, color: Flux.colour.beam, size: attrs.size + 2, zIndex: 2 };
      return attrs;
    }

    focus(key) {
      if (!this.graph.hasNode(key)) return;
      const d = this.renderer.getNodeDisplayData(key);
      if (d) this.renderer.getCamera().animate({ x: d.x, y: d.y, ratio: 0.25 }, { duration: 400 });
    }

    /** Cluster hulls: the convex hull of each cluster's visible grains, drawn under the graph. */
    drawHulls() {
      const canvas = this.hullCanvas;
      const { width, height } = this.renderer.getDimensions();
      if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
      const ctx = canvas.getContext("2d");
      ctx.clearRect(0, 0, width, height);
      const groups = new Map();
      this.graph.forEachNode((key, a) => {
        if (a.role !== "grain" || !a.cluster || (this.hidden && this.hidden.has(key))) return;
        if (!groups.has(a.cluster)) groups.set(a.cluster, []);
        const list = groups.get(a.cluster);
        if (list.length < 300) list.push(this.renderer.graphToViewport({ x: a.x, y: a.y }));
      });
      groups.forEach((points, cid) => {
        if (points.length < 3) return;
        const hull = convexHull(points);
        ctx.beginPath();
        hull.forEach((p, i) => (i ? ctx.lineTo(p.x, p.y) : ctx.moveTo(p.x, p.y)));
        ctx.closePath();
        ctx.fillStyle = Flux.colour.cluster(cid) + "22";
        ctx.strokeStyle = Flux.colour.cluster(cid) + "88";
        ctx.lineWidth = 8; ctx.lineJoin = "round";
        ctx.stroke(); ctx.fill();
      });
    }
  }

  function convexHull(points) {
    const p = points.slice().sort((a, b) => a.x - b.x || a.y - b.y);
    const cross = (o, a, b) => (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
    const lower = [], upper = [];
    p.forEach((pt) => { while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], pt) <= 0) lower.pop(); lower.push(pt); });
    p.slice().reverse().forEach((pt) => { while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], pt) <= 0) upper.pop(); upper.push(pt); });
    return lower.slice(0, -1).concat(upper.slice(0, -1));
  }

  Flux.GraphView = GraphView;

  Flux.describe = function (e) {
    const p = e.payload || {};
    switch (e.kind) {
      case "grains.grain_stored": return `stored #${p.grain_id}${e.grain ? `: ${e.grain.label}` : ""}`;
      case "graph.signal_propagated": return `retrieved ${(p.returned || []).length} grain(s)${e.trace ? ` for “${e.trace.query}”` : ""}`;
      case "graph.feedback_applied": return `#${p.grain_id} rated ${p.useful ? "useful" : "not useful"} (weight ${p.weight})`;
      case "graph.decay_swept": return `decay sweep: ${p.examined ?? 0} examined, ${p.moved ?? 0} moved`;
      case "graph.clusters_rebuilt": return `re-clustered: ${p.clusters ?? "?"} clusters`;
      case "vitals.warning_raised": return `warning: ${p.signal}`;
      case "vitals.warning_cleared": return `cleared: ${p.signal}`;
      default: return `${e.kind.split(".").pop().replace(/_/g, " ")}${p.grain_id ? ` #${p.grain_id}` : ""}${p.to ? ` → ${p.to}` : ""}`;
    }
  };
})();
