/* Globe: clusters on a rotating sphere, sized by members. Drag to turn it, click a cluster for its card. */
(function () {
  "use strict";
  const canvas = document.getElementById("globe");
  const info = document.getElementById("globe-info");
  const card = document.getElementById("globe-card");
  const spin = document.getElementById("spin");
  const ctx = canvas.getContext("2d");
  let clusters = [];
  let yaw = 0, pitch = 0.35, drag = null, drawn = [];

  function place(list) {
    // A Fibonacci sphere: the n-th cluster (largest first) at an even spread of latitudes and longitudes.
    const n = list.length;
    return list.map((c, i) => {
      const y = n === 1 ? 0 : 1 - (2 * (i + 0.5)) / n;
      const r = Math.sqrt(1 - y * y), t = i * Math.PI * (3 - Math.sqrt(5));
      return { ...c, px: r * Math.cos(t), py: y, pz: r * Math.sin(t) };
    });
  }

  function draw() {
    const w = (canvas.width = canvas.clientWidth), h = (canvas.height = canvas.clientHeight);
    const radius = Math.min(w, h) * 0.38, cx = w / 2, cy = h / 2;
    ctx.clearRect(0, 0, w, h);
    ctx.beginPath(); ctx.arc(cx, cy, radius, 0, 2 * Math.PI);
    ctx.fillStyle = "#16213a"; ctx.fill(); ctx.strokeStyle = "#2d3b5c"; ctx.stroke();
    const biggest = Math.max(1, ...clusters.map((c) => c.members));
    drawn = clusters.map((c) => {
      const x1 = c.px * Math.cos(yaw) - c.pz * Math.sin(yaw), z1 = c.px * Math.sin(yaw) + c.pz * Math.cos(yaw);
      const y2 = c.py * Math.cos(pitch) - z1 * Math.sin(pitch), z2 = c.py * Math.sin(pitch) + z1 * Math.cos(pitch);
      return { c, x: cx + x1 * radius, y: cy - y2 * radius, z: z2, size: 3 + 22 * Math.sqrt(c.members / biggest) };
    }).sort((a, b) => a.z - b.z);
    drawn.forEach((d) => {
      const front = d.z >= 0;
      ctx.globalAlpha = front ? 0.95 : 0.25;
      ctx.beginPath(); ctx.arc(d.x, d.y, d.size * (0.75 + 0.25 * d.z), 0, 2 * Math.PI);
      ctx.fillStyle = Flux.colour.cluster(d.c.id); ctx.fill();
      if (front && d.size > 9) {
        ctx.fillStyle = "#e8ecf3"; ctx.font = "12px system-ui, sans-serif";
        ctx.fillText(d.c.label, d.x + d.size + 3, d.y + 4);
      }
    });
    ctx.globalAlpha = 1;
  }

  function frame() {
    if (spin.checked && !drag) yaw += 0.004;
    draw();
    requestAnimationFrame(frame);
  }

  canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, yaw, pitch, moved: false }; });
  window.addEventListener("mouseup", (e) => {
    if (drag && !drag.moved) {
      const rect = canvas.getBoundingClientRect();
      const hit = drawn.filter((d) => d.z >= 0).reverse().find((d) => Math.hypot(d.x - (e.clientX - rect.left), d.y - (e.clientY - rect.top)) <= d.size + 2);
      card.hidden = !hit;
      if (hit) card.replaceChildren(Flux.el("strong", {}, hit.c.label), Flux.el("div", {}, `${hit.c.members} grains · cluster ${hit.c.id}`));
    }
    drag = null;
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    drag.moved = drag.moved || Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3;
    yaw = drag.yaw + (e.clientX - drag.x) * 0.01;
    pitch = Math.max(-1.4, Math.min(1.4, drag.pitch + (e.clientY - drag.y) * 0.01));
  });

  async function load() {
    const data = await Flux.api("/api/clusters");
    clusters = place(data.clusters);
    canvas.dataset.clusters = clusters.length;
    info.textContent = `${data.clusters.length} clusters holding ${data.grains} grains`;
    document.body.dataset.ready = "1";
  }
  load().then(() => requestAnimationFrame(frame)).catch((error) => { info.textContent = `could not load: ${error.message}`; });
  Flux.live({ onEvents: (events) => { if (events.some((e) => e.kind === "graph.clusters_rebuilt")) load(); } });
})();
