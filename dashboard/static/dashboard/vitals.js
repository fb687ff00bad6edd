/* Vitals: one timeline per signal with its healthy band, and the warnings raised and cleared. */
(function () {
  "use strict";
  const box = document.getElementById("signals");
  const info = document.getElementById("vitals-info");
  const NS = "http://www.w3.org/2000/svg";
  const svg = (tag, attrs) => { const n = document.createElementNS(NS, tag); Object.entries(attrs).forEach(([k, v]) => n.setAttribute(k, v)); return n; };

  function chart(signal, snapshots, warnings) {
    const w = 320, h = 90, pad = 6;
    const values = signal.values.filter((v) => v !== null && v !== undefined);
    const bounds = values.concat([signal.low, signal.high].filter((v) => v !== null && v !== undefined));
    let lo = Math.min(...bounds, 0), hi = Math.max(...bounds, 1e-9);
    if (signal.high === null || signal.high === undefined) hi = hi * 1.5 + 1e-3; // room above an open band
    if (hi === lo) hi = lo + 1;
    const xs = (i) => (snapshots.length < 2 ? w / 2 : pad + (i / (snapshots.length - 1)) * (w - 2 * pad));
    const ys = (v) => h - pad - ((v - lo) / (hi - lo)) * (h - 2 * pad);
    const root = svg("svg", { viewBox: `0 0 ${w} ${h}`, role: "img", "aria-label": signal.name });
    const bandLow = signal.low ?? lo, bandHigh = signal.high ?? hi;
    root.append(svg("rect", { x: 0, y: ys(bandHigh), width: w, height: Math.max(1, ys(bandLow) - ys(bandHigh)), fill: "#2f8f5b22", class: "band" }));
    const times = snapshots.map((s) => Date.parse(s.at));
    warnings.filter((x) => x.signal === signal.name).forEach((x) => {
      const t = Date.parse(x.at);
      let i = times.findIndex((s) => s >= t);
      if (i < 0) i = times.length - 1;
      root.append(svg("line", { x1: xs(i), x2: xs(i), y1: 0, y2: h, stroke: x.change === "raised" ? "#c0392b" : "#2f8f5b",
                                "stroke-dasharray": "3 2", class: `mark ${x.change}` }));
    });
    const points = signal.values.map((v, i) => (v === null || v === undefined ? null : `${xs(i)},${ys(v)}`)).filter(Boolean);
    if (points.length) root.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: "#2456c9", "stroke-width": 1.5 }));
    signal.values.forEach((v, i) => {
      if (v === null || v === undefined) return;
      root.append(svg("circle", { cx: xs(i), cy: ys(v), r: 2.2, fill: signal.states[i] === "warning" ? "#c0392b" : "#2456c9" }));
    });
    return root;
  }

  async function load() {
    const data = await Flux.api("/api/vitals");
    const last = (s) => (s.values.length ? s.values[s.values.length - 1] : null);
    const lastState = (s) => (s.states.length ? s.states[s.states.length - 1] : "no_data");
    box.replaceChildren(...data.signals.map((s) => Flux.el("section", { class: "signal", "data-signal": s.name },
      Flux.el("h3", {}, s.name, Flux.el("span", { class: `state-${lastState(s)}` }, `${Flux.round(last(s))} · ${lastState(s).replace("_", " ")}`)),
      Flux.el("p", {}, s.measures, ` · healthy ${s.low ?? "−∞"} … ${s.high ?? "∞"}`),
      chart(s, data.snapshots, data.warnings))));
    const open = data.warnings.length;
    info.textContent = data.snapshots.length
      ? `${data.snapshots.length} snapshots since ${Flux.when(data.snapshots[0].at)}; ${open} warning change(s)`
      : "no health snapshot yet: they are taken by Celery beat every HEALTH_INTERVAL_SECONDS (or POST /health/snapshot)";
    document.body.dataset.ready = "1";
  }
  load().catch((error) => { info.textContent = `could not load: ${error.message}`; });
  Flux.live({ onEvents: (events) => { if (events.some((e) => e.kind.startsWith("vitals."))) load(); } });
  setInterval(() => load().catch(() => {}), 60000);
})();
