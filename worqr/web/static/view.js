"use strict";
// The worqr web view: fills the page's tables from /ui/api/ and refreshes them
// every POLL_MS. Every value goes in with textContent, never as markup: queue
// names, job ids and errors are user data. Times are Redis's clock: ages are
// computed against the "now" each answer carries, never the browser's clock.
// The answers hold the HTTP API's own records (a queue's and a worker's "row",
// a job's "job", a dead-letter "page", a queue's "limits", a page of groups),
// with the view's extras beside them.
(function () {
  const POLL_MS = 2000;
  const TOKEN_KEY = "worqr-token";
  const LIVE = ["delayed", "queued", "active", "retrying"];
  const TASK_STATES = ["queued", "active", "failed"];
  const LIST_ERROR_CHARS = 160; // an error in a list; the job's page shows it whole (1 KB at most)
  const body = document.body;

  // -- building the DOM ---------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "cls") node.className = value;
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function fill(id, rows, empty) {
    const table = document.getElementById(id);
    const tbody = table.tBodies[0];
    const width = table.tHead ? table.tHead.rows[0].cells.length : 1;
    const fresh = rows.length
      ? rows.map((cells) => el("tr", {}, ...cells.map((c) => (c instanceof Node && (c.tagName === "TD" || c.tagName === "TH") ? c : el("td", {}, c)))))
      : [el("tr", {}, el("td", { colspan: width, cls: "muted", text: empty }))];
    tbody.replaceChildren(...fresh);
  }

  function num(value) {
    return el("td", { cls: "num", text: value === null || value === undefined ? "–" : value });
  }

  function cut(text, limit) {
    return text && text.length > limit ? text.slice(0, limit - 3) + "..." : text;
  }

  // A queue's count in each state, from the API's queue row: a job queue's
  // seven; a task queue's queued, in process (active) and dead letters (failed).
  function countsOf(row) {
    return row.kind === "jobs" ? row.jobs : { queued: row.tasks, active: row.processes, failed: row.failed };
  }

  function queueHref(name, state) {
    const params = new URLSearchParams({ name: name });
    if (state) params.set("state", state);
    return "/ui/queue?" + params.toString();
  }

  function jobHref(queue, id) {
    return "/ui/job?" + new URLSearchParams({ queue: queue, id: id }).toString();
  }

  function iso(t) {
    return t === null || t === undefined ? "–" : new Date(t * 1000).toISOString().replace("T", " ").replace("Z", "");
  }

  function span(seconds) {
    const s = Math.abs(seconds);
    if (s < 60) return s.toFixed(1) + " s";
    if (s < 3600) return (s / 60).toFixed(1) + " min";
    if (s < 86400) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  }

  function ago(t, now) {
    if (t === null || t === undefined) return "–";
    return t > now ? "in " + span(t - now) : span(now - t) + " ago";
  }

  function status(text, bad) {
    const node = document.getElementById("status");
    node.textContent = text;
    node.className = bad ? "bad" : "muted";
  }

  // -- the token ------------------------------------------------------------
  // Kept in this tab's sessionStorage (never a cookie, never in a URL) and sent
  // as "Authorization: Bearer" with every /ui/api/ request, reads included. A
  // server without a token ignores it.

  let wanted = false; // a read was refused: no polling until a token is given
  let wake = () => {}; // the page's poll, run at once when a token is given

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  function withToken(headers, sent) {
    return sent ? Object.assign({ Authorization: "Bearer " + sent }, headers) : headers;
  }

  function showToken() {
    document.getElementById("token").textContent = token() ? "token ✓" : "token";
  }

  // The form; with `hideData` (a refused read) the tables go and polling waits.
  function askToken(message, hideData) {
    document.getElementById("token-message").textContent = message;
    document.getElementById("token-form").hidden = false;
    if (hideData) {
      wanted = true;
      document.querySelector("main").hidden = true;
      status("waiting for the token", true);
    }
    document.getElementById("token-input").focus();
  }

  function useToken(event) {
    event.preventDefault();
    const input = document.getElementById("token-input");
    const given = input.value.trim();
    input.value = "";
    if (given) sessionStorage.setItem(TOKEN_KEY, given);
    else sessionStorage.removeItem(TOKEN_KEY);
    document.getElementById("token-form").hidden = true;
    wanted = false;
    showToken();
    wake();
  }

  function tokenButton() {
    const form = document.getElementById("token-form");
    if (!form.hidden && !wanted) form.hidden = true;
    else askToken("The bearer token this view sends to the server.", false);
  }

  // A read answered 401: the token sent was wrong (forget it), or none was sent.
  // One sent before the form gave another is stale: the new one is on its way.
  function readRefused(error) {
    if (error.token !== token()) return;
    if (error.token) sessionStorage.removeItem(TOKEN_KEY);
    showToken();
    if (error.token) askToken("The token was refused (" + error.message + "): give this server's token.", true);
    else askToken("This view needs the server's bearer token.", true);
  }

  // -- talking to the server ----------------------------------------------

  // An answer's JSON, or its text as the message (a plain-text error).
  async function answerOf(response) {
    const text = await response.text();
    try {
      const data = JSON.parse(text);
      if (data && typeof data === "object") return data;
    } catch (e) {
      // not JSON: the text is the message
    }
    return { message: text.trim() };
  }

  // An error as the HTTP API writes it ("error.message"; the view's are the
  // same), or a plain-text one (a standalone view's refused token).
  function messageOf(response, answer) {
    const error = answer.error;
    return (error && error.message) || answer.message || "HTTP " + response.status;
  }

  async function getJson(path, params) {
    const url = path + "?" + new URLSearchParams(params || {}).toString();
    const sent = token();
    const response = await fetch(url, { credentials: "omit", cache: "no-store", headers: withToken({}, sent) });
    const data = await answerOf(response);
    if (!response.ok) {
      const error = new Error(messageOf(response, data));
      error.status = response.status;
      error.token = sent;
      throw error;
    }
    return data;
  }

  // A mutation: a JSON POST with the token. A refusal is reported where the
  // button is, and the form offered; the next read tells whether the token is
  // wrong for reading too.
  async function post(path, data) {
    const response = await fetch(path, {
      method: "POST",
      credentials: "omit",
      headers: withToken({ "Content-Type": "application/json" }, token()),
      body: JSON.stringify(data),
    });
    const answer = await answerOf(response);
    if (response.status === 401) {
      const why = messageOf(response, answer);
      askToken("Refused: " + why + ".", false); // the server's reason: wrong token, or read-only
      return { ok: false, message: "refused: " + why };
    }
    if (!response.ok) return { ok: false, message: messageOf(response, answer) };
    return Object.assign({ ok: true }, answer);
  }

  // Runs refresh() now and every POLL_MS (not while the tab is hidden, nor
  // while the page waits for a token).
  function poll(refresh) {
    let timer = null;
    async function tick() {
      clearTimeout(timer);
      if (!document.hidden && !wanted) {
        try {
          await refresh();
          if (!wanted) document.querySelector("main").hidden = false;
          status("updated " + new Date().toLocaleTimeString(), false);
        } catch (error) {
          if (error.status === 401) readRefused(error);
          else status(error.message, true);
        }
      }
      timer = setTimeout(tick, POLL_MS);
    }
    document.addEventListener("visibilitychange", () => document.hidden || tick());
    wake = tick;
    tick();
    return tick;
  }

  function actionButton(label, cls, onclick) {
    return el("button", { type: "button", cls: "act " + cls, text: label, onclick: onclick });
  }

  // -- the overview: queues, workers, recent recoveries ---------------------

  function overviewPage() {
    let before = null;

    function rate(queue, now, events) {
      if (!before || !(queue.row.name in before.stats) || now <= before.now) return null;
      const old = before.stats[queue.row.name];
      let moved = 0;
      for (const event of events) moved += (queue.stats[event] || 0) - (old[event] || 0);
      return Math.max(0, moved / (now - before.now)).toFixed(1);
    }

    function queueRow(q, now) {
      const jobs = q.row.kind === "jobs";
      const c = countsOf(q.row);
      return [
        el("td", {}, el("a", { href: queueHref(q.row.name), text: q.row.name })),
        q.row.kind,
        num(c.queued),
        num(c.active),
        num(jobs ? c.delayed : null),
        num(jobs ? c.retrying : null),
        num(c.failed),
        num(jobs ? c.finished : null),
        num(jobs ? c.cancelled : null),
        num(rate(q, now, ["enqueued", "submitted"])),
        num(rate(q, now, ["finished"])),
        num(rate(q, now, ["failed"])),
        num(q.stats.recovered || 0),
      ];
    }

    function workerRow(w) {
      const row = w.row;
      const queues = el("td", {});
      row.queues.forEach((name, i) => {
        if (i) queues.append(", ");
        queues.append(el("a", { href: queueHref(name), text: name }));
      });
      return [
        row.id,
        el("td", { cls: row.alive ? "" : "bad", text: row.alive ? "yes" : "NO (lease expired)" }),
        row.host === null ? "?" : row.host,
        num(row.pid),
        num(w.in_process),
        queues,
      ];
    }

    function recoveryRow(event, now) {
      if (event.kind === "worker") {
        const how = event.lease_expired
          ? "its lease had expired: failed by its peers"
          : "deregistered, or died and was failed between two polls";
        const where = "host " + (event.host === null ? "?" : event.host) + ", pid " + (event.pid === null ? "?" : event.pid);
        return [ago(event.at, now), "worker " + event.worker + " left", where + "; " + how];
      }
      const parts = [];
      if (event.recovered) parts.push(event.recovered + " returned to the front");
      if (event.dead_lettered) parts.push(event.dead_lettered + " dead-lettered (past max_recoveries)");
      if (event.poisoned) parts.push(event.poisoned + " failed as poison (past max_recoveries)");
      return [ago(event.at, now), el("td", {}, "queue ", el("a", { href: queueHref(event.queue), text: event.queue })), parts.join(", ")];
    }

    poll(async () => {
      const data = await getJson("/ui/api/overview");
      document.getElementById("prefix").textContent = "key prefix " + data.prefix;
      fill("queues", data.queues.map((q) => queueRow(q, data.now)), "no queues yet");
      fill("workers", data.workers.map(workerRow), "no workers");
      fill("recoveries", data.recoveries.map((e) => recoveryRow(e, data.now)), "none seen since the view started");
      before = { now: data.now, stats: Object.fromEntries(data.queues.map((q) => [q.row.name, q.stats])) };
    });
  }

  // -- a queue: counts, its jobs by state, its dead letters -------------------

  function queuePage() {
    const queue = body.dataset.queue;
    const params = new URLSearchParams(location.search);
    let state = params.get("state") || "queued";
    let limit = 50;
    let refresh = null;

    function when(job, now) {
      if (job.state === "delayed" || job.state === "retrying") return "due " + ago(job.due, now) + " (" + iso(job.due) + ")";
      if (job.state === "active") return "started " + ago(job.started, now);
      if (job.state === "queued") return "created " + ago(job.created, now);
      return "ended " + ago(job.ended, now);
    }

    async function act(path, job) {
      const answer = await post(path, { queue: queue, id: job.id });
      const verb = path.endsWith("retry") ? "retried" : "cancelled";
      const said = answer.ok ? "job " + job.id + (answer.done ? " " : " not ") + verb : answer.message;
      document.getElementById("failed-result").textContent = said;
      refresh();
    }

    function jobActions(job) {
      const cell = el("td", {});
      if (job.state === "failed" || job.state === "cancelled") {
        cell.append(actionButton("retry", "retry", () => act("/ui/api/retry", job)));
      } else if (LIVE.includes(job.state)) {
        cell.append(actionButton("cancel", "danger", () => act("/ui/api/cancel", job)));
      }
      return cell;
    }

    function jobRow(job, now) {
      return [
        el("td", {}, el("a", { href: jobHref(queue, job.id), text: job.id })),
        el("td", {}, el("span", { cls: "state " + job.state, text: job.state })),
        num(job.attempts),
        when(job, now),
        el("td", { cls: "error", text: cut(job.error, LIST_ERROR_CHARS) || "" }),
        jobActions(job),
      ];
    }

    function counts(data) {
      const kind = data.row.kind;
      const count = countsOf(data.row);
      // "waiting" (flow parents, keep_last follow-ups) is counted once a queue has such jobs
      const listed = kind === "jobs" ? body.dataset.states.split(" ") : TASK_STATES;
      const states = listed.filter((name) => count[name] != null);
      document.getElementById("kind").textContent = kind === "jobs" ? "(job queue)" : "(task queue)";
      const cards = states.map((name) => {
        const label = kind === "tasks" && name === "active" ? "in process" : name;
        const inner = [el("span", { cls: "count", text: count[name] }), el("span", { cls: "label", text: label })];
        if (kind !== "jobs") return el("div", { cls: "card", "data-state": name }, ...inner);
        const cls = "card link" + (name === state ? " chosen" : "");
        return el("a", { cls: cls, href: queueHref(queue, name), "data-state": name }, ...inner);
      });
      document.getElementById("counts").replaceChildren(...cards);
      limits(data.limits, data.now);
    }

    function limits(held, now) {
      const line = document.getElementById("limits");
      pausing(held);
      const parts = [];
      if (held && held.rate) parts.push("at most " + held.rate.starts + " starts in " + held.rate.seconds + " s");
      if (held && held.max_active !== null) parts.push("at most " + held.max_active + " active (" + held.active + " now)");
      line.hidden = parts.length === 0 && !(held && held.paused);
      if (line.hidden) return;
      let text = held.paused ? "Paused: no job starts until it is resumed" : "";
      if (parts.length) text += (text ? ". " : "") + "Limits: " + parts.join("; ");
      if (held.limited) {
        text += held.closed_until !== null ? "; held back for " + span(Math.max(0, held.closed_until - now)) : "; held back now";
      }
      line.textContent = text;
      line.className = held.limited || held.paused ? "bad" : "muted";
    }

    // A job queue's pause or resume button, named for what a click does.
    function pausing(held) {
      document.getElementById("pausing").hidden = !held;
      const button = document.getElementById("pause");
      button.textContent = held && held.paused ? "resume" : "pause";
      button.dataset.paused = held && held.paused ? "yes" : "no";
    }

    async function pauseOrResume() {
      const resuming = document.getElementById("pause").dataset.paused === "yes";
      const answer = await post(resuming ? "/ui/api/resume" : "/ui/api/pause", { queue: queue });
      document.getElementById("pause-result").textContent = answer.ok ? (answer.paused ? "paused" : "resumed") : answer.message;
      refresh();
    }

    // The API's dead-letter page: a job queue's failed jobs (and the next page's
    // cursor), or a task queue's count, with the view's first letters beside it.
    function deadLetters(data) {
      const page = data.page;
      const holder = document.getElementById("failed");
      const shown = page.kind === "jobs" ? page.jobs.length : data.letters.length;
      document.getElementById("redrive").hidden = shown === 0;
      document.getElementById("purge").hidden = shown === 0;
      if (shown === 0) {
        holder.replaceChildren(el("p", { cls: "muted", text: "none" }));
        return;
      }
      const cutShort = page.kind === "jobs" ? page.cursor !== null : page.count > shown;
      const more = cutShort ? el("p", { cls: "muted", text: "(the first " + shown + " are shown)" }) : null;
      if (page.kind === "jobs") {
        const table = el("table", { id: "failed-jobs" }, el("thead", {}, el("tr", {}, ...["job id", "attempts", "ended (UTC)", "error", ""].map((h) => el("th", { text: h })))), el("tbody"));
        holder.replaceChildren(table, more || "");
        fill("failed-jobs", page.jobs.map((job) => [
          el("td", {}, el("a", { href: jobHref(queue, job.id), text: job.id })),
          num(job.attempts),
          iso(job.ended),
          el("td", { cls: "error", text: cut(job.error, LIST_ERROR_CHARS) || "" }),
          jobActions(job),
        ]), "none");
        return;
      }
      const heads = data.letters.some((l) => "preview" in l) ? ["bytes", "payload"] : ["bytes"];
      const table = el("table", { id: "failed-tasks" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", { text: h })))), el("tbody"));
      holder.replaceChildren(el("p", { text: page.count + " dead letters, newest first (payloads are hidden unless the view runs with --show-payloads)" }), table, more || "");
      fill("failed-tasks", data.letters.map((l) => ("preview" in l ? [num(l.bytes), l.preview] : [num(l.bytes)])), "none");
    }

    async function queueWide(path, verb) {
      if (path.endsWith("purge") && !window.confirm("Drop every dead letter of " + queue + "?")) return;
      const answer = await post(path, { queue: queue });
      const n = answer.redriven !== undefined ? answer.redriven : answer.purged;
      document.getElementById("failed-result").textContent = answer.ok ? verb + " " + n : answer.message;
      refresh();
    }

    document.getElementById("pause").addEventListener("click", pauseOrResume);

    // The fair-share groups, a page at a time: the page shown is the one at
    // groupCursor (null: the first); "next page" follows the cursor it gave.
    let groupCursor = null;
    let nextGroups = null;

    function groupLimits(group) {
      return [
        group.rate ? group.rate.starts + " in " + group.rate.seconds + " s" : "–",
        num(group.max_active),
      ];
    }

    function groupNow(group, now) {
      const held = [];
      if (group.paused) held.push("paused");
      if (group.closed_until !== null) held.push("held back for " + span(Math.max(0, group.closed_until - now)));
      else if (group.limited) held.push("at its cap");
      return el("td", { cls: held.length ? "bad" : "muted", text: held.join(", ") || "free" });
    }

    async function pauseGroup(group) {
      const path = group.paused ? "/ui/api/resume" : "/ui/api/pause";
      const answer = await post(path, { queue: queue, group: group.name });
      const said = answer.ok ? "group " + group.name + (answer.paused ? " paused" : " resumed") : answer.message;
      document.getElementById("group-result").textContent = said;
      refresh();
    }

    function groupRow(group, now) {
      const button = actionButton(group.paused ? "resume" : "pause", "group-pause", () => pauseGroup(group));
      return [group.name, num(group.queued), num(group.delayed), num(group.active), ...groupLimits(group), groupNow(group, now), el("td", {}, button)];
    }

    async function groups() {
      const params = { queue: queue, limit: body.dataset.groupsPage };
      if (groupCursor !== null) params.cursor = groupCursor;
      const data = await getJson("/ui/api/groups", params);
      const page = data.page;
      document.getElementById("groups-section").hidden = page.groups.length === 0 && groupCursor === null;
      fill("groups", page.groups.map((group) => groupRow(group, data.now)), "no groups on this page");
      nextGroups = page.cursor;
      document.getElementById("groups-next").hidden = page.cursor === null;
      document.getElementById("groups-first").hidden = groupCursor === null;
    }

    document.getElementById("groups-next").addEventListener("click", () => {
      groupCursor = nextGroups;
      refresh();
    });
    document.getElementById("groups-first").addEventListener("click", () => {
      groupCursor = null;
      refresh();
    });

    // Buttons over every job of the state shown: which fit it, and what they did.
    const BULK = { cancel: "cancelled", retry: "retried", promote: "promoted", purge: "purged" };
    function bulkButtons(count) {
      const fits = {
        cancel: LIVE.includes(state),
        retry: state === "failed" || state === "cancelled",
        promote: state === "delayed",
        purge: state === "finished" || state === "failed" || state === "cancelled",
      };
      for (const action of Object.keys(BULK)) {
        document.getElementById("bulk-" + action).hidden = !fits[action] || count === 0;
      }
    }

    async function bulk(action) {
      if ((action === "cancel" || action === "purge") && !window.confirm(action + " every " + state + " job of " + queue + "?")) return;
      const answer = await post("/ui/api/bulk", { queue: queue, action: action, state: state });
      document.getElementById("bulk-result").textContent = answer.ok ? BULK[action] + " " + answer.done : answer.message;
      refresh();
    }

    for (const action of Object.keys(BULK)) {
      document.getElementById("bulk-" + action).addEventListener("click", () => bulk(action));
    }
    document.getElementById("redrive").addEventListener("click", () => queueWide("/ui/api/redrive", "retried"));
    document.getElementById("purge").addEventListener("click", () => queueWide("/ui/api/purge", "purged"));
    document.getElementById("more").addEventListener("click", () => {
      limit = Math.min(500, limit + 50);
      refresh();
    });
    document.getElementById("search").addEventListener("submit", async (event) => {
      event.preventDefault();
      const id = document.getElementById("search-id").value.trim();
      const out = document.getElementById("search-result");
      if (!id) return;
      try {
        await getJson("/ui/api/job", { queue: queue, id: id });
        location.href = jobHref(queue, id);
      } catch (error) {
        out.textContent = error.message;
      }
    });

    refresh = poll(async () => {
      const data = await getJson("/ui/api/queue", { name: queue });
      counts(data);
      const jobs = data.row.kind === "jobs";
      document.getElementById("jobs-section").hidden = !jobs;
      if (jobs) {
        document.getElementById("state-name").textContent = state + (state === "delayed" || state === "retrying" ? ", by due time" : "");
        const page = await getJson("/ui/api/jobs", { queue: queue, state: state, limit: limit });
        fill("jobs", page.jobs.map((job) => jobRow(job, data.now)), "no " + state + " jobs");
        bulkButtons(countsOf(data.row)[state] || 0);
        document.getElementById("more").hidden = page.cursor === null || limit >= 500;
        await groups();
      } else {
        document.getElementById("groups-section").hidden = true;
      }
      deadLetters(await getJson("/ui/api/failed", { queue: queue }));
    });
  }

  // -- one job: its record, history and log ------------------------------

  function jobPage() {
    const queue = body.dataset.queue;
    const id = body.dataset.job;
    let refresh = null;

    async function act(path, verb) {
      const answer = await post(path, { queue: queue, id: id });
      const out = document.getElementById("action-result");
      out.textContent = answer.ok ? (answer.done ? verb : "not " + verb) : answer.message;
      refresh();
    }

    document.getElementById("retry").addEventListener("click", () => act("/ui/api/retry", "retried"));
    document.getElementById("cancel").addEventListener("click", () => act("/ui/api/cancel", "cancelled"));

    // The API's progress: text, or bytes as base64 (a status line: 4 KB at most).
    function progress(job) {
      if ("progress_b64" in job) return "base64 " + job.progress_b64;
      return job.progress === null ? "–" : job.progress;
    }

    refresh = poll(async () => {
      const data = await getJson("/ui/api/job", { queue: queue, id: id });
      const job = data.job;
      const rows = [
        ["id", job.id],
        ["queue", job.queue],
        ["state", el("span", { cls: "state " + job.state, text: job.state })],
        ["attempts", job.attempts],
        ["error", el("pre", { cls: "error", text: job.error || "–" })],
        ["progress", progress(job)],
        ["payload size", data.payload_bytes === null ? "–" : data.payload_bytes + " bytes"],
        ["result size", data.result_bytes === null ? "–" : data.result_bytes + " bytes"],
      ];
      if ("payload_preview" in data) rows.push(["payload", data.payload_preview === null ? "–" : data.payload_preview]);
      if ("result_preview" in data) rows.push(["result", data.result_preview === null ? "–" : data.result_preview]);
      fill("detail", rows.map(([name, value]) => [el("th", { text: name }), value]), "");
      fill("history", data.history.map((h) => [h.step, iso(h.at), ago(h.at, data.now)]), "–");
      // The log's lines, as text (user data, never markup), one per line.
      const log = document.getElementById("log");
      log.textContent = data.log.length ? data.log.join("\n") : "–";
      log.dataset.lines = String(data.log.length);
      document.getElementById("retry").hidden = !(job.state === "failed" || job.state === "cancelled");
      document.getElementById("cancel").hidden = !LIVE.includes(job.state);
    });
  }

  document.getElementById("token").addEventListener("click", tokenButton);
  document.getElementById("token-form").addEventListener("submit", useToken);
  showToken();
  const pages = { overview: overviewPage, queue: queuePage, job: jobPage };
  pages[body.dataset.page]();
})();
