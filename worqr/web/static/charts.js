"use strict";
// The web view's charts of the metrics history (/ui/api/history), drawn with
// the vendored uPlot (static/vendor/uplot): on the front page the sum of every
// queue's, on a queue's page that queue's. Each chart's container says in
// data-points how many points it draws (0 while empty), so a test can tell a
// drawn chart from an empty one. Times are Redis's clock (the points' starts).
(function () {
  const REFRESH_MS = 30000; // a point is a minute: no need to ask more often
  const TOKEN_KEY = "worqr-token"; // view.js keeps the bearer token there
  const section = document.getElementById("history-section");
  if (!section || typeof uPlot === "undefined") return;
  const queue = document.body.dataset.page === "queue" ? document.body.dataset.queue : null;
  const SERIES = {
    throughput: [["started", "#2454c5"], ["finished", "#17803d"]],
    failures: [["retried", "#c77c02"], ["failed", "#b42318"]],
    runtime: [["p50", "#2454c5"], ["p95", "#c77c02"], ["p99", "#b42318"]],
  };
  const plots = {};
  let since = Number(section.querySelector(".range").dataset.since);
  let timer = null;

  function options(name, width, range) {
    const series = SERIES[name].map(([label, stroke]) => ({
      label: label,
      stroke: stroke,
      width: 1.5,
      points: { show: true, size: 4 },
      spanGaps: false,
      value: name === "runtime" ? (u, v) => (v === null ? "–" : seconds(v)) : undefined,
    }));
    const y = name === "runtime" ? { size: 64, values: (u, ticks) => ticks.map(seconds) } : { size: 50 };
    return {
      width: width,
      height: 180,
      series: [{}].concat(series),
      axes: [{}, y],
      scales: {
        x: { time: true, range: () => range },
        y: name === "runtime" ? { distr: 3 } : { range: (u, min, max) => [0, Math.max(1, max)] },
      },
      legend: { live: false },
    };
  }

  function seconds(v) {
    if (v === null || v === undefined) return "";
    return v < 1 ? +(v * 1000).toPrecision(3) + " ms" : +v.toPrecision(3) + " s";
  }

  // The x axis spans the range asked for, ending at Redis's "now" of the answer.
  function draw(points, now) {
    const times = points.map((p) => p.time);
    const range = [now - since, now];
    for (const figure of section.querySelectorAll(".chart")) {
      const name = figure.dataset.chart;
      const data = [times].concat(SERIES[name].map(([field]) => points.map((p) => p[field])));
      const width = Math.max(280, Math.floor(figure.getBoundingClientRect().width) - 16);
      if (plots[name]) plots[name].destroy();
      plots[name] = new uPlot(options(name, width, range), data, figure);
      figure.dataset.points = String(times.length);
    }
  }

  async function refresh() {
    clearTimeout(timer);
    const params = new URLSearchParams({ since: String(since) });
    if (queue !== null) params.set("queue", queue);
    const sent = sessionStorage.getItem(TOKEN_KEY) || "";
    const headers = sent ? { Authorization: "Bearer " + sent } : {};
    const out = document.getElementById("history-result");
    try {
      const response = await fetch("/ui/api/history?" + params.toString(), { credentials: "omit", cache: "no-store", headers: headers });
      const answer = await response.json();
      if (!response.ok) throw new Error((answer.error && answer.error.message) || "HTTP " + response.status);
      draw(answer.points, answer.now);
      const t = answer.totals;
      out.textContent = answer.points.length
        ? `${t.started} started, ${t.finished} finished, ${t.retried} retried, ${t.failed} failed, ${t.cancelled} cancelled`
        : "no job runs in this time";
    } catch (error) {
      out.textContent = "history: " + error.message;
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  for (const button of section.querySelectorAll(".range")) {
    button.addEventListener("click", () => {
      since = Number(button.dataset.since);
      for (const other of section.querySelectorAll(".range")) other.classList.toggle("chosen", other === button);
      refresh();
    });
  }
  section.querySelector(".range").classList.add("chosen");
  refresh();
})();
