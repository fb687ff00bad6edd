/* Knowledge Graph: grains coloured by cluster or status, conduits by kind, search, dossier on click. */
(function () {
  "use strict";
  const view = new Flux.GraphView(document.getElementById("graph"), { style: "graph" });
  window.fluxView = view;
  const info = document.getElementById("graph-info");
  const results = document.getElementById("search-results");

  view.load().then((data) => {
    info.textContent = data.mode === "clusters"
      ? `${data.grains} grains in ${data.clusters.length} clusters: click or zoom into a cluster to see its grains`
      : `${data.grains} grains, ${data.edges.length} conduits drawn`;
  }).catch((error) => { info.textContent = `could not load the graph: ${error.message}`; });

  document.getElementById("colour-by").addEventListener("change", (e) => {
    view.colourBy = e.target.value; view.restyle();
  });

  document.getElementById("search-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const q = document.getElementById("search").value.trim();
    if (!q) { results.replaceChildren(); return; }
    let hits;
    try { hits = await Flux.api("/api/search", { q }); } catch (error) {
      results.replaceChildren(Flux.el("li", {}, error.message)); return;
    }
    if (view.mode === "clusters") await Promise.all([...new Set(hits.map((h) => h.cluster))].slice(0, 5).map((c) => view.expand(c)));
    view.flash(hits.map((h) => h.key), 8000);
    results.replaceChildren(...(hits.length ? hits.map((h) => Flux.el("li", { "data-grain": h.id, on: {
      click: () => { view.focus(h.key); Flux.openDossier(h.id); } } }, `#${h.id} ${h.content}`)) : [Flux.el("li", {}, "no grain matches")]));
  });

  Flux.live({ onEvents: (events) => events.forEach((e) => { if (e.grain) { view.addGrain(e.grain); view.flash([e.grain.key]); } }) });
})();
