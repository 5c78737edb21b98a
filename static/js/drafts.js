// Unsaved input: never lose typed work (docs/guides/annotator.md, "Nothing you type is lost").
//
// A form opts in with data-draft="<key>" (the form and the object, e.g.
// "tag-review:project:3:item:5:response:11") and data-draft-version="<the version it shows>",
// next to the box of templates/partials/input_draft.html (data-draft-box="<key>", which carries
// the drafts endpoint's URL and the messages). Then:
//
// - what is typed is kept in localStorage at once and sent to the server's draft (POST
//   /input-drafts/<key>/) a second after the last keystroke;
// - on load, a draft (this browser's or the server's, the newer) that differs from what the page
//   shows is offered: "You have unsaved input from <time> — Restore / Discard", saying so when
//   it was typed on an older version;
// - Restore fills the form. data-draft-restore="server" forms (the tag editor, the trajectory
//   editor: their state is drawn by the server) are then re-drawn by the server from the
//   restored fields (a "refresh" post, which saves nothing); other editors finish the job on
//   the "draft:restored" event (the plan editor redraws its steps from the JSON), and
//   "draft:before-restore" lets one prepare its form (the item form adds document blocks);
// - a save first sends the draft; if that fails because the session expired, the page's CSRF
//   token is stale or the server cannot be reached, the save is not sent, the input stays on
//   screen and the box says why. The real save's view deletes the server's draft; a draft this
//   browser had sent that the server no longer has was saved (or discarded elsewhere) and is
//   forgotten. data-draft-saved on a form swapped in by htmx says a save just succeeded.
// - data-draft-skip="name other" leaves fields out (a timer's hidden field).
(function () {
  "use strict";

  var FORM = "form[data-draft]";
  var DELAY = 1000;
  var STORE = "benchwright:draft:";
  var states = {}; // key -> {baseline, version, timer, pick, loaded}

  // ---------------------------------------------------------------- the form's fields

  function skipped(form) {
    return (form.dataset.draftSkip || "").split(/\s+/).filter(Boolean);
  }

  function serialize(form) {
    var skip = skipped(form);
    var pairs = [];
    new FormData(form).forEach(function (value, name) {
      if (typeof value !== "string" || name === "csrfmiddlewaretoken" || skip.indexOf(name) >= 0) return;
      pairs.push([name, value]);
    });
    return pairs;
  }

  // Set the form's fields to the pairs (a name given n times fills its first n fields in page
  // order); returns the pairs no field took.
  function fill(form, pairs) {
    var values = {};
    pairs.forEach(function (pair) { (values[pair[0]] = values[pair[0]] || []).push(pair[1]); });
    var used = {};
    var skip = skipped(form);
    Array.prototype.forEach.call(form.elements, function (el) {
      var name = el.name;
      var type = (el.type || "").toLowerCase();
      if (!name || name === "csrfmiddlewaretoken" || skip.indexOf(name) >= 0) return;
      if (type === "file" || type === "submit" || type === "button" || type === "reset" || type === "image") return;
      var list = values[name] || [];
      var before;
      if (type === "checkbox" || type === "radio") {
        before = el.checked;
        el.checked = list.indexOf(el.value) >= 0;
        if (el.checked) used[name] = (used[name] || 0) + 1;
        if (before === el.checked) return;
      } else if (type === "select-multiple") {
        Array.prototype.forEach.call(el.options, function (o) { o.selected = list.indexOf(o.value) >= 0; });
        used[name] = list.length;
      } else {
        var index = used[name] || 0;
        if (index >= list.length) return;
        used[name] = index + 1;
        before = el.value;
        el.value = list[index];
        if (before === el.value) return;
      }
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    });
    // What no field took: a name the form has no field of, a choice it does not offer, or more
    // values than it has fields of that name.
    var fields = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.name) (fields[el.name] = fields[el.name] || []).push(el);
    });
    var seen = {};
    var left = [];
    pairs.forEach(function (pair) {
      var els = fields[pair[0]] || [];
      seen[pair[0]] = (seen[pair[0]] || 0) + 1;
      var type = els.length ? (els[0].type || "").toLowerCase() : "";
      if (!els.length) left.push(pair);
      else if (type === "checkbox" || type === "radio") {
        if (!els.some(function (el) { return el.value === pair[1]; })) left.push(pair);
      } else if (type !== "select-multiple" && seen[pair[0]] > els.length) left.push(pair);
    });
    return left;
  }

  function cssName(name) {
    return window.CSS && CSS.escape ? CSS.escape(name) : name.replace(/["\\]/g, "\\$&");
  }

  // ---------------------------------------------------------------- storage

  function readLocal(key) {
    try {
      var entry = JSON.parse(window.localStorage.getItem(STORE + key) || "null");
      return entry && Array.isArray(entry.payload) ? entry : null;
    } catch (e) { return null; }
  }

  function writeLocal(key, entry) {
    try { window.localStorage.setItem(STORE + key, JSON.stringify(entry)); } catch (e) { /* full: the server keeps it */ }
  }

  function forgetLocal(key) {
    try { window.localStorage.removeItem(STORE + key); } catch (e) { /* nothing kept */ }
  }

  // ---------------------------------------------------------------- the server

  function boxFor(key) {
    return document.querySelector('[data-draft-box="' + cssName(key) + '"]');
  }

  function endpoint(key) {
    var box = boxFor(key);
    return box ? box.dataset.draftsUrl.replace("KEY", encodeURIComponent(key)) : null;
  }

  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; } catch (e) { return ""; }
  }

  // Logging in again (in another tab) gives the session a new CSRF token: take it for the
  // page's forms and htmx requests, so "save again" works without a reload.
  function renewToken(token) {
    if (!token) return;
    document.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(function (input) { input.value = token; });
    var headers = {};
    try { headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}"); } catch (e) { headers = {}; }
    headers["X-CSRFToken"] = token;
    document.body.setAttribute("hx-headers", JSON.stringify(headers));
  }

  // What an answer of the endpoint means: "ok", "none" (no draft), "login", "csrf",
  // "network", "refused" (403/404 JSON: the user may not edit this), "error" (400/413: kept here).
  function outcome(response) {
    if (response.type === "opaqueredirect" || (response.redirected && isLogin(response.url))) return "login";
    if (response.status === 401) return "login";
    var json = (response.headers.get("Content-Type") || "").indexOf("application/json") >= 0;
    if (response.status === 403 && !json) return "csrf";
    if (response.ok) return "ok";
    if (response.status === 404) return "none";
    if (response.status === 403) return "refused";
    return "error";
  }

  function isLogin(url) {
    var box = document.querySelector("[data-draft-box]");
    if (!box || !url) return false;
    try { return new URL(url, window.location.href).pathname === new URL(box.dataset.loginUrl, window.location.href).pathname; } catch (e) { return false; }
  }

  function request(key, method, body) {
    var url = endpoint(key);
    if (!url) return Promise.resolve({ status: "network" });
    var init = { method: method, credentials: "same-origin", redirect: "manual", headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (response) {
      var status = outcome(response);
      if (status === "login" || status === "csrf") return { status: status };
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (data && data.csrf_token) renewToken(data.csrf_token);
        return { status: status, data: data };
      });
    }, function () { return { status: "network" }; });
  }

  // Send the form's draft now, after any send of it still under way (one at a time per form:
  // a save waits for an autosave in flight, so the two never race). A stale CSRF token is
  // renewed (when the session lives) and the send tried once more.
  function push(form) {
    var state = states[form.dataset.draft];
    clearTimeout(state.timer);
    var next = (state.sending || Promise.resolve()).then(function () { return send(form); });
    state.sending = next.then(function () {}, function () {});
    return next;
  }

  function send(form) {
    var key = form.dataset.draft;
    var entry = readLocal(key) || snapshotEntry(form);
    var body = { version: entry.version || "", payload: entry.payload };
    return request(key, "POST", body).then(function (answer) {
      if (answer.status !== "csrf") return answer;
      return request(key, "GET").then(function (renewed) {
        if (renewed.status === "login" || renewed.status === "network") return renewed;
        return request(key, "POST", body);
      });
    }).then(function (answer) {
      if (answer.status === "ok") {
        var now = readLocal(key);
        if (now && now.at === entry.at) { now.synced = true; writeLocal(key, now); }
      }
      return answer;
    });
  }

  // ---------------------------------------------------------------- keeping what is typed

  function snapshotEntry(form) {
    var state = states[form.dataset.draft];
    return { version: state ? state.version : form.dataset.draftVersion || "", payload: serialize(form), at: Date.now(), synced: false };
  }

  function snapshot(form) {
    var key = form.dataset.draft;
    var state = states[key];
    if (!state) return;
    var entry = snapshotEntry(form);
    if (JSON.stringify(entry.payload) === state.baseline) return; // nothing typed (yet)
    var kept = readLocal(key);
    if (kept && JSON.stringify(kept.payload) === JSON.stringify(entry.payload)) return;
    writeLocal(key, entry);
    clearTimeout(state.timer);
    state.timer = setTimeout(function () { push(form); }, DELAY);
  }

  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest(FORM);
    if (form) snapshot(form);
  });
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest(FORM);
    if (form) snapshot(form);
  });

  // ---------------------------------------------------------------- the box

  function show(key, part, reason) {
    var box = boxFor(key);
    if (!box) return;
    var offer = box.querySelector("[data-draft-offer]");
    var failed = box.querySelector("[data-draft-failed]");
    if (part === "offer") offer.hidden = false;
    if (part === "failed") {
      failed.hidden = false;
      failed.querySelectorAll("[data-draft-why]").forEach(function (p) { p.hidden = p.dataset.draftWhy !== reason; });
    }
    box.hidden = offer.hidden && failed.hidden;
    if (part === "failed") box.scrollIntoView({ block: "nearest" });
  }

  function hide(key, part) {
    var box = boxFor(key);
    if (!box) return;
    var element = box.querySelector(part === "offer" ? "[data-draft-offer]" : "[data-draft-failed]");
    if (element) element.hidden = true;
    box.hidden = box.querySelector("[data-draft-offer]").hidden && box.querySelector("[data-draft-failed]").hidden;
  }

  function offer(form, pick) {
    var key = form.dataset.draft;
    var box = boxFor(key);
    if (!box) return;
    states[key].pick = pick;
    var time = box.querySelector("[data-draft-time]");
    var when = new Date(pick.at);
    time.dateTime = when.toISOString();
    time.textContent = when.toLocaleString();
    var stale = Boolean(pick.version && states[key].version && pick.version !== states[key].version);
    box.querySelector("[data-draft-stale]").hidden = !stale;
    box.querySelector("[data-draft-was]").textContent = pick.version || "";
    box.querySelector("[data-draft-now]").textContent = states[key].version || "";
    show(key, "offer");
  }

  function formFor(key) {
    return document.querySelector('form[data-draft="' + cssName(key) + '"]');
  }

  function restore(form, pairs) {
    form.dispatchEvent(new CustomEvent("draft:before-restore", { bubbles: true, detail: { pairs: pairs } }));
    var left = fill(form, pairs);
    if (form.dataset.draftRestore === "server") {
      // Fields the page does not have yet (steps added after it was drawn) ride along hidden;
      // the server draws the form from all of them.
      left.forEach(function (pair) {
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = pair[0];
        input.value = pair[1];
        form.appendChild(input);
      });
      var button = document.createElement("button");
      button.type = "submit";
      button.name = "op";
      button.value = "refresh";
      button.hidden = true;
      button.dataset.draftRefresh = "";
      form.appendChild(button);
      // What the server does not draw back (the tag editor's note) is filled in again once
      // the form is swapped in.
      states[form.dataset.draft].refill = pairs;
      button.click();
    } else {
      form.dispatchEvent(new CustomEvent("draft:restored", { bubbles: true, detail: { pairs: pairs } }));
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-draft-restore], [data-draft-discard]");
    if (!button) return;
    var box = button.closest("[data-draft-box]");
    var key = box.dataset.draftBox;
    var state = states[key];
    var form = formFor(key);
    if (!state || !state.pick || !form) return;
    var pick = state.pick;
    state.pick = null;
    hide(key, "offer");
    if (button.hasAttribute("data-draft-restore")) {
      writeLocal(key, { version: pick.version, payload: pick.payload, at: Date.now(), synced: Boolean(pick.synced) });
      restore(form, pick.payload);
      var field = form.querySelector("textarea, input[type=text]");
      if (field && form.dataset.draftRestore !== "server") field.focus();
    } else {
      forgetLocal(key);
      request(key, "DELETE");
    }
  });

  // ---------------------------------------------------------------- on load

  function init(form) {
    if (form._draftInit) return;
    form._draftInit = true;
    var key = form.dataset.draft;
    var state = states[key];
    var version = form.dataset.draftVersion || "";
    if (form.hasAttribute("data-draft-saved")) {
      // A save just succeeded here (the server dropped its draft): start afresh.
      forgetLocal(key);
      states[key] = { baseline: JSON.stringify(serialize(form)), version: version, loaded: true };
      hide(key, "failed");
      return;
    }
    if (state) {
      // The same form drawn again by the server (an edit that is not a save, a 409): what it
      // shows now is the working input.
      state.version = version;
      if (state.refill) {
        fill(form, state.refill);
        state.refill = null;
      }
      snapshot(form);
      return;
    }
    state = states[key] = { baseline: JSON.stringify(serialize(form)), version: version };
    var local = readLocal(key);
    request(key, "GET").then(function (answer) {
      var server = null;
      if (answer.status === "ok" && answer.data) {
        server = { version: answer.data.version, payload: answer.data.payload, at: answer.data.updated_ms, synced: true };
        if (local && JSON.stringify(local.payload) === JSON.stringify(server.payload)) {
          local.synced = true; // the server has exactly this (its answer may have come after a reload)
          writeLocal(key, local);
        }
      } else if (answer.status === "none" && local && local.synced) {
        // The server had this and no longer does: it was saved (or discarded elsewhere).
        forgetLocal(key);
        local = null;
      }
      var pick = local;
      if (server && (!pick || server.at > pick.at)) pick = server;
      if (pick && JSON.stringify(pick.payload) !== state.baseline) offer(form, pick);
    });
  }

  function initAll(root) {
    var forms = [];
    if (root.matches && root.matches(FORM)) forms.push(root);
    if (root.querySelectorAll) forms = forms.concat(Array.prototype.slice.call(root.querySelectorAll(FORM)));
    forms.forEach(init);
  }

  document.addEventListener("DOMContentLoaded", function () { initAll(document); });
  document.addEventListener("htmx:load", function (event) { initAll(event.target); });

  // ---------------------------------------------------------------- saving

  function isSave(submitter) {
    if (!submitter || submitter.name !== "op") return true;
    return String(submitter.value).indexOf("save") === 0;
  }

  function failed(form, status) {
    var reason = status === "login" || status === "csrf" || status === "network" ? status : null;
    if (reason) show(form.dataset.draft, "failed", reason);
    return Boolean(reason);
  }

  // A plain form: send the draft first; only when that reached a live session is the form
  // submitted.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches(FORM) || event.defaultPrevented) return;
    if (form.hasAttribute("hx-post") || form.hasAttribute("hx-put")) return; // htmx:confirm below
    if (form._draftChecked) { form._draftChecked = false; return; }
    if (!isSave(event.submitter)) return;
    event.preventDefault();
    var submitter = event.submitter;
    snapshotNow(form);
    push(form).then(function (answer) {
      if (failed(form, answer.status)) return;
      hide(form.dataset.draft, "failed");
      form._draftChecked = true;
      if (submitter && submitter.form === form) form.requestSubmit(submitter); else form.requestSubmit();
    });
  });

  function snapshotNow(form) {
    var key = form.dataset.draft;
    var entry = snapshotEntry(form);
    var kept = readLocal(key);
    if (!kept || JSON.stringify(kept.payload) !== JSON.stringify(entry.payload)) writeLocal(key, entry);
  }

  // An htmx form's save: the same check before htmx sends it.
  document.addEventListener("htmx:confirm", function (event) {
    var form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest(FORM);
    var trigger = event.detail.triggeringEvent;
    if (!form || !trigger || trigger.type !== "submit" || !isSave(trigger.submitter)) return;
    event.preventDefault();
    snapshotNow(form);
    push(form).then(function (answer) {
      if (failed(form, answer.status)) return;
      hide(form.dataset.draft, "failed");
      event.detail.issueRequest(true);
    });
  });

  // Any htmx request from such a form (a save, an edit, a live check) that comes back as the
  // login page, a CSRF refusal or nothing at all: keep the form as it is and say so.
  function formOfRequest(event) {
    var elt = event.detail && event.detail.elt;
    return elt && elt.closest ? elt.closest(FORM) : null;
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var form = formOfRequest(event);
    var xhr = event.detail.xhr;
    if (!form || !xhr) return;
    var json = (xhr.getResponseHeader("Content-Type") || "").indexOf("application/json") >= 0;
    if (isLogin(xhr.responseURL)) {
      event.detail.shouldSwap = false;
      failed(form, "login");
    } else if (xhr.status === 403 && !json && /csrf/i.test(xhr.responseText || "")) {
      event.detail.shouldSwap = false;
      event.detail.isError = false; // the box says it; no toast as well
      failed(form, "csrf");
    } else if (xhr.status < 400) {
      hide(form.dataset.draft, "failed");
    }
  });

  document.addEventListener("htmx:sendError", function (event) {
    var form = formOfRequest(event);
    if (form) failed(form, "network");
  });
})();
