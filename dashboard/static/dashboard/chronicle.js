/* Chronicle: the activity log played back over the graph (time slider, replay) and live activity as it
 * happens: the search beam of each retrieval, new grains, heat trails of recent use, cluster hulls. */
(function () {
  "use strict";
  const view = new Flux.GraphView(document.getElementById("graph"), { style: "mycelium", hulls: true });
  window.fluxView = view;
  const list = document.getElementById("events");
  const slider = document.getElementById("slider");
  const at = document.getElementById("slider-at");
  const follow = document.getElementById("follow");
  const play = document.getElementById("play");
  const events = [];
  let position = -1;
  let timer = null;

  function grainKey(e) {
    return e.kind === "grains.grain_stored" && e.payload.grain_id ? `g${e.payload.grain_id}` : null;
  }

  function item(e) {
    const li = Flux.el("li", { "data-event": e.id, "data-kind": e.kind },
      Flux.el("time", { datetime: e.at }, new Date(e.at).toLocaleTimeString()),
      // <bdi>: a right-to-left override left open in a grain's text reversed the rest of the line
      Flux.el("span", { class: "kind" }, e.kind.split(".")[0]), " ", Flux.el("bdi", {}, Flux.describe(e)));
    const gid = e.payload.grain_id || (e.grain && e.grain.id);
    if (gid) li.addEventListener("click", () => Flux.openDossier(gid));
    return li;
  }

  /** Show the graph as it was at event ``i``: later grains hidden, event i's effect drawn. */
  function seek(i) {
    position = Math.max(0, Math.min(i, events.length - 1));
    slider.max = Math.max(0, events.length - 1);
    slider.value = position;
    const e = events[position];
    at.textContent = e ? `${position + 1} / ${events.length} · ${new Date(e.at).toLocaleString()}` : "no activity yet";
    view.hidden = new Set(events.slice(position + 1).map(grainKey).filter(Boolean));
    list.querySelectorAll("li.now").forEach((li) => li.classList.remove("now"));
    if (!e) return;
    const li = list.querySelector(`li[data-event="${e.id}"]`);
    if (li) { li.classList.add("now"); li.scrollIntoView({ block: "nearest" }); }
    apply(e);
  }

  function apply(e) {
    if (e.trace) view.beam(e.trace);
    else if (e.payload.grain_id) view.flash([`g${e.payload.grain_id}`]);
    if (view.renderer) view.renderer.refresh();
  }

  function add(batch) {
    batch.forEach((e) => {
      events.push(e);
      list.append(item(e));
      if (e.grain && !view.graph.hasNode(e.grain.key)) view.addGrain(e.grain);
    });
    if (follow.checked && !timer) seek(events.length - 1);
    else slider.max = Math.max(0, events.length - 1);
  }

  slider.addEventListener("input", () => { follow.checked = false; seek(Number(slider.value)); });
  play.addEventListener("click", () => {
    if (timer) { clearInterval(timer); timer = null; play.textContent = "▶ Replay"; return; }
    follow.checked = false;
    if (position >= events.length - 1) seek(0);
    play.textContent = "❚❚ Pause";
    timer = setInterval(() => {
      if (position >= events.length - 1) { clearInterval(timer); timer = null; play.textContent = "▶ Replay"; return; }
      seek(position + 1);
    }, 450);
  });
  setInterval(() => { view.cool(0.85); if (view.renderer) view.renderer.refresh(); }, 2000);

  view.load().then(async () => {
    const history = await Flux.api("/api/activity", { limit: 1000 });
    add(history.events);
    Flux.live({ onEvents: add, after: history.last_event_id });
  }).catch((error) => { at.textContent = `could not load: ${error.message}`; });
})();
