/* Mycelium: the conduit network as growth. Strong paths thick and bright, fading ones thin, shortcuts gold. */
(function () {
  "use strict";
  const view = new Flux.GraphView(document.getElementById("graph"), { style: "mycelium" });
  window.fluxView = view;
  const info = document.getElementById("graph-info");
  view.load().then((data) => {
    let strong = 0, shortcuts = 0;
    view.graph.forEachEdge((k, a) => { if (a.kind === "shortcut") shortcuts++; else if (a.weight >= 0.6) strong++; });
    info.textContent = `${data.edges.length} conduits: ${strong} strong, ${shortcuts} shortcuts`;
  }).catch((error) => { info.textContent = `could not load the graph: ${error.message}`; });
  Flux.live({ onEvents: (events) => events.forEach((e) => {
    if (e.grain) view.addGrain(e.grain);
    if (e.trace) view.beam(e.trace);
  }) });
})();
