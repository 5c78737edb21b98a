// Judge page (and the blind-solve page): time on item, the queue of items held ahead, and the keys
// shown on the page:
//   digits   pick a choice (the key shown by each; on a binary or 0-2 scale the pick submits)
//   Enter    submit once a choice is picked (outside a text field; in the comment it is a
//            new line), Ctrl+Enter submit from anywhere, the comment included
//   c r e i o p  move to the field whose label shows the key (comment, reason, relabel)
//   n next, u undo the last judgment
// The judging area is swapped in place by htmx after a submit (the next item), so everything
// here looks the form up when a key is pressed, and the timer starts again on each swap.
//
// The queue of items ahead (issue 25, finding 3): while an item is judged under a live lease
// its judging area names data-ahead-url and data-ahead-max, and the items after it are leased
// in one request that fills the queue (naming those already held, &held=: the server leases
// data-ahead-max minus those, and answers each judging area in a <template data-url>), all
// held here, out of the page (a <template>'s content: not shown, not focusable), in order.
// On submit, once the form is valid, the first item held is shown at once (URL, title, timer,
// the "benchwright:judging-shown" event) if it is fresh (its lease has more than half its
// length left; staler ones are dropped, and the server serves them), the judgment joins the
// queue of saves, and the queue is filled again right then (never in a save's answer,
// so that request does not wait behind the saves). Saves are sent one at a time, in the order
// the items were judged; each answer updates the progress line and the undo paragraph of the
// item on screen. A save refused (or lost to the network) puts its item back on screen with
// the server's errors and the input sent, "Your judgment of ... was not saved: ...", and the
// item that was on screen goes back to the front of the queue as it is, with anything typed
// into it; a second refusal while an item put back is on screen waits in the queue right
// after it. The saves after a refused one are still sent. With nothing held, a submit waits
// for a lease ahead on its way, else for the saves, then goes the usual way (the server
// answers with the next item, the oldest of the user's leases).
// Leaving the page with judgments not yet sent asks first; the items held ahead are given back.
(() => {
  "use strict";
  let started = performance.now();

  const form = () => document.getElementById("judgment");
  const judging = () => document.getElementById("judging");

  // The seconds on the item go with the submit; capture phase: before htmx reads the form.
  document.addEventListener(
    "submit",
    (event) => {
      if (event.target.id !== "judgment") return;
      const seconds = event.target.querySelector("input[name=seconds]");
      if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    },
    true,
  );
  // A new item swapped in: its time starts now, and no field of it holds the focus (htmx
  // gives the focus back to the element with the id the focused one had, the new comment,
  // where the keys would be text).
  const swappedIn = (event) => event.detail.target && event.detail.target.id === "judging";
  document.addEventListener("htmx:afterSwap", (event) => {
    if (!swappedIn(event)) return;
    started = performance.now();
    const area = judging();
    // The server showed an item held here (its oldest open lease): it is held no longer.
    if (area) queue = queue.filter((entry) => entry.key !== area.dataset.itemKey);
    mark();
    prefetch();
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const active = document.activeElement;
    if (swappedIn(event) && active && event.detail.target.contains(active)) active.blur();
  });

  // ------------------------------------------------------------------ the items held ahead

  // In the order they are shown: {node, key, url, title, receivedAt, left, total, kept, putBack}
  // (kept: it was on screen, maybe with input, and is never dropped; putBack: a judgment of it
  // was refused, and it comes back before the items leased ahead).
  let queue = [];
  let onScreen = null; // the entry shown last from the queue, while it is on screen
  let prefetching = null; // the request for the next item ahead, while in flight
  let waited = false; // a submit waits for it (the queue was empty)
  let sending = 0; // judgments queued or on their way, not answered yet
  const sendingKeys = []; // their items' keys
  let pending = Promise.resolve(); // settles once the last one is answered

  function csrf() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  const headers = (more) => Object.assign({ "HX-Request": "true", "HX-Target": "judging", "X-CSRFToken": csrf() }, more);

  // Fresh: its lease has more than half its length left.
  const fresh = (ahead) => ahead.left - (performance.now() - ahead.receivedAt) / 1000 > ahead.total / 2;
  // The items leased ahead (not those put back).
  const leased = () => queue.filter((entry) => !entry.putBack);

  // What the page holds ahead of the item on screen (data-ahead-held: their keys, in order).
  function mark() {
    const area = judging();
    if (!area) return;
    const keys = leased().map((entry) => entry.key);
    if (keys.length) area.dataset.aheadHeld = keys.join(" ");
    else delete area.dataset.aheadHeld;
  }

  // The thumbnails of an item held ahead go into the browser's cache now.
  function nameImages(node) {
    const box = document.getElementById("next-images");
    if (!box) return;
    for (const img of node.querySelectorAll(".thumbs img[src]")) {
      const link = document.createElement("link");
      link.rel = "prefetch";
      link.as = "image";
      link.href = img.getAttribute("src");
      box.append(link);
    }
  }

  // Hold the judging area in ``fragment`` (a template's content), whose URL is ``url``, at the
  // end of the queue; false when the page has that item already (on screen, held, or sent).
  function hold(url, fragment) {
    const node = fragment.getElementById("judging");
    const area = judging();
    const key = node && node.dataset.itemKey;
    if (!node || (area && area.dataset.itemKey === key)) return false;
    if (queue.some((entry) => entry.key === key) || sendingKeys.includes(key)) return false;
    const title = fragment.querySelector("title");
    queue.push({
      node,
      key,
      url: url || location.href,
      title: title ? title.textContent : document.title,
      receivedAt: performance.now(),
      left: Number(node.dataset.leaseLeft || 0),
      total: Number(node.dataset.leaseTotal || 0),
      kept: false,
      putBack: false,
    });
    nameImages(node);
    mark();
    return true;
  }

  function parse(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content;
  }

  // Fill the queue: lease the items after the one on screen and those held, as many as are
  // missing (the server derives it from &held=), and hold their judging areas in order (204:
  // nothing is left; anything else: the submits go the usual way once the queue is empty).
  // One request at a time: when another item came on screen meanwhile, the page asks again
  // after it.
  function prefetch() {
    const area = judging();
    const url = area && area.dataset.aheadUrl;
    if (!url || prefetching || !form() || area.dataset.putBack) return prefetching || Promise.resolve();
    const ahead = leased();
    if (ahead.length >= Number(area.dataset.aheadMax || 1)) return Promise.resolve();
    const after = area.dataset.itemKey;
    const ask = new URL(url, location.href);
    for (const entry of ahead) ask.searchParams.append("held", entry.key);
    prefetching = fetch(ask, { method: "POST", credentials: "same-origin", redirect: "manual", headers: headers() })
      .then((response) =>
        response.status === 200
          ? response.text().then((html) => {
              for (const one of parse(html).querySelectorAll("template[data-url]")) hold(one.dataset.url, one.content);
            })
          : undefined,
      )
      .catch(() => undefined)
      .finally(() => {
        prefetching = null;
        const now = judging();
        if (now && now.dataset.itemKey !== after) prefetch();
      });
    return prefetching;
  }

  // Show a judging area in place of the one on screen (``waited``: the queue was empty at the
  // key press, and the item came once a lease ahead on its way arrived).
  function show(node, url, title, since, from, waited = false) {
    const area = judging();
    const active = document.activeElement;
    if (active && area && area.contains(active)) active.blur();
    if (area) area.replaceWith(node);
    const f = node.querySelector("#judgment");
    if (f) delete f.dataset.sending;
    if (window.htmx) window.htmx.process(node);
    if (url && url !== location.href) history.pushState({ htmx: true }, "", url);
    document.title = title;
    window.scrollTo(0, 0);
    started = since;
    mark();
    document.dispatchEvent(new CustomEvent("benchwright:judging-shown", { detail: { area: node, from, waited } }));
  }

  const itemName = (area) => {
    const h1 = area.querySelector("h1");
    return h1 ? h1.textContent.trim() : "this item";
  };

  // The answer to a judgment sent in the background: the progress line and the undo paragraph
  // of the item on screen, when it is still the one the save named.
  function saved(html, key) {
    const area = judging();
    if (!area || area.dataset.itemKey !== key) return;
    for (const part of [...parse(html).children]) {
      const old = part.id && document.getElementById(part.id);
      if (!old || part.tagName === "TITLE") continue;
      old.replaceWith(part);
      if (window.htmx) window.htmx.process(part);
    }
  }

  function reason(response, node) {
    if (!response) return "the server could not be reached (check the connection)";
    if (response.type === "opaqueredirect") return "you are no longer logged in (log in again in another tab)";
    const errors = node ? [...node.querySelectorAll(".alert-error")].map((e) => e.textContent.trim()) : [];
    return errors.filter(Boolean).join(" ") || `the server refused it (HTTP ${response.status})`;
  }

  // A refusal answered with a whole page (403: the lease is no longer this person's): its reason.
  function pageReason(html) {
    const box = parse(html).getElementById("error-reason");
    return box ? box.textContent.trim().replace(/\.$/, "") : "";
  }

  // A judgment sent in the background was not saved: its item (the server's area with its
  // errors, else the area as it was left), saying so.
  function notSaved(kept, response, html) {
    let node = null;
    if (response && [400, 403, 409].includes(response.status)) {
      node = parse(html).getElementById("judging");
      if (node && node.dataset.itemKey !== kept.key) node = null;
    }
    const why = (!node && response && response.status === 403 && pageReason(html)) || reason(response, node);
    node = node || kept.node;
    for (const old of node.querySelectorAll("#not-saved")) old.remove();
    const message = document.createElement("p");
    message.id = "not-saved";
    message.className = "alert alert-error";
    message.setAttribute("role", "alert");
    message.textContent = `Your judgment of ${kept.name} was not saved: ${why}. Press Enter to send it again.`;
    const card = node.querySelector("#judge-form") || node;
    card.prepend(message);
    node.dataset.putBack = "1";
    return node;
  }

  // Put a refused judgment's item back: on screen, the item there going back to the front of
  // the queue as it is; or, when an item put back is on screen already, in the queue right
  // after it (and after any other put back before).
  function putBack(kept, response, html) {
    const node = notSaved(kept, response, html);
    const entry = { node, key: kept.key, url: kept.url, title: kept.title, kept: true, putBack: true };
    const area = judging();
    if (area && area.dataset.putBack) {
      const at = queue.findIndex((other) => !other.putBack);
      queue.splice(at < 0 ? queue.length : at, 0, entry);
      mark();
      return;
    }
    if (area && area.querySelector("#judgment")) {
      const back = onScreen && onScreen.node === area
        ? onScreen
        : { node: area, key: area.dataset.itemKey, url: location.href, title: document.title, putBack: false };
      back.kept = true;
      queue.unshift(back);
    }
    onScreen = null;
    show(node, kept.url, kept.title, kept.started, "put back");
  }

  // Send one judgment, once those before it are answered.
  function post(kept, action, body, next) {
    const area = judging();
    const shown = (area && area.dataset.itemKey) || next.key;
    const t0 = performance.now();
    return fetch(action, {
      method: "POST",
      body,
      credentials: "same-origin",
      redirect: "manual",
      // A save on its way when the page is left still reaches the server (the browser keeps
      // at most 64 KB of such requests: a judgment with a longer comment goes the usual way).
      keepalive: small(body),
      headers: headers({ "X-Benchwright-Ahead": shown }),
    })
      .then(
        (response) =>
          response.text().then((html) => {
            const ok = response.status === 200 && response.headers.get("X-Judgment-Saved") === "1";
            if (ok) saved(html, shown);
            else putBack(kept, response, html);
            return ok;
          }),
        () => {
          putBack(kept, null, "");
          return false;
        },
      )
      .then((ok) => {
        sending -= 1;
        const at = sendingKeys.indexOf(kept.key);
        if (at >= 0) sendingKeys.splice(at, 1);
        const detail = { ms: performance.now() - t0, ok: Boolean(ok) };
        document.dispatchEvent(new CustomEvent("benchwright:judgment-sent", { detail }));
      })
      .catch((error) => console.error(error)); // the saves after it go on all the same
  }

  // Whether a form's fields (UTF-8, at most 3 bytes a character) fit a keepalive request.
  const small = (body) =>
    [...body.values()].reduce((n, v) => n + (typeof v === "string" ? 3 * v.length : v.size), 0) < 60000;

  // Leaving the page (closed, reloaded, another page opened): with judgments not sent yet the
  // browser asks first; the items held ahead are given back (their leases end now, so other
  // people get them at once, not when the leases run out). A page the browser restores from
  // its back-forward cache drops them and asks for its queue again.
  let released = false;
  window.addEventListener("beforeunload", (event) => {
    if (!sending) return;
    event.preventDefault();
    event.returnValue = "";
  });
  window.addEventListener("pagehide", () => {
    const area = judging();
    const url = area && area.dataset.aheadRelease;
    const keys = leased().map((entry) => entry.key);
    if (!url || !keys.length || !navigator.sendBeacon) return;
    const body = new FormData();
    body.append("csrfmiddlewaretoken", csrf());
    for (const key of keys) body.append("held", key);
    released = navigator.sendBeacon(url, body);
  });
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted || !released) return;
    released = false;
    queue = queue.filter((entry) => entry.putBack);
    mark();
    prefetch();
  });

  // The judgment of the item on screen joins the queue of saves (``next``: the item shown
  // in its place).
  function send(f, next) {
    const area = judging();
    const kept = { node: area, key: area.dataset.itemKey, url: location.href, title: document.title, started, name: itemName(area) };
    const action = f.action;
    const body = new FormData(f);
    sending += 1;
    sendingKeys.push(kept.key);
    pending = pending.then(() => post(kept, action, body, next));
  }

  // The first item held on screen at once, the judgment queued behind it, the queue filled
  // again now (one request).
  function swapAhead(f) {
    const seconds = f.querySelector("input[name=seconds]");
    if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    const next = queue.shift();
    send(f, next);
    onScreen = next.putBack ? null : next;
    show(next.node, next.url, next.title, performance.now(), next.putBack ? "put back" : "prefetch", waited);
    waited = false;
    prefetch();
  }

  function submit() {
    const f = form();
    if (!f) return false;
    if (f.dataset.sending) return undefined; // one submit per item: a second key press waits
    if (!f.checkValidity()) {
      f.reportValidity();
      return undefined;
    }
    f.dataset.sending = "1";
    const again = () => {
      if (!document.contains(f)) return; // its item was put back behind a refused one
      delete f.dataset.sending;
      submit();
    };
    const changing = f.querySelector("input[name=version]");
    const area = judging(); // none on the blind-solve page
    const inPlace = Boolean(area && area.dataset.aheadUrl) && !(changing && changing.value);
    queue = queue.filter((entry) => entry.kept || fresh(entry));
    if (inPlace && queue.length) {
      swapAhead(f);
      return undefined;
    }
    if (inPlace && prefetching) {
      // An item ahead is on its way: sooner than asking the server for the next one.
      waited = true; // the queue was empty at the key press
      prefetching.then(again);
      return undefined;
    }
    if (sending) {
      // The usual way answers with the user's oldest open lease: after the saves queued.
      pending.then(again);
      return undefined;
    }
    waited = false; // the server answers this one
    f.requestSubmit();
  }
  document.addEventListener("htmx:afterRequest", (event) => {
    const f = form();
    if (f && event.detail.elt === f) delete f.dataset.sending;
  });

  function radios() {
    const f = form();
    return f ? [...f.querySelectorAll("input[name=value][type=radio]")] : [];
  }

  function choose(event) {
    const f = form();
    const label = f && f.querySelector(`label.choice[data-choice-key="${event.key}"]`);
    const pick = label && label.querySelector("input[type=radio]");
    if (!pick) return false;
    pick.checked = true;
    if (f.hasAttribute("data-pick-submits")) submit();
  }

  // Enter: submits once a choice is picked. Not on a button or link (their own Enter), not in
  // a text field (the comment's new line; a single-line answer submits by itself).
  function enter(event) {
    const target = event.target;
    if (target.closest && target.closest("button, a, summary")) return false;
    if (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type !== "radio")) return false;
    const all = radios();
    if (!form() || (all.length && !all.some((r) => r.checked))) return false;
    submit();
  }

  function focusKey(event) {
    const area = judging() || document;
    const f = form();
    // The blind-solve page's comment has no data-focus-key: c finds it by name.
    const field = area.querySelector(`[data-focus-key="${event.key}"]`) ||
      (event.key === "c" && f ? f.querySelector("textarea[name=comment]") : null);
    if (!field) return false;
    field.focus();
  }

  // A click on Submit (or Enter in a single-line answer) goes the same way as the keys;
  // capture phase: before htmx sends it.
  document.addEventListener(
    "submit",
    (event) => {
      const f = event.target;
      if (f.id !== "judgment" || f.dataset.sending || (!queue.length && !sending)) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      submit();
    },
    true,
  );

  const keys = { n: "[data-key=n]", u: "[data-key=u]", Enter: enter };
  for (const letter of "creiop") keys[letter] = focusKey;
  for (const digit of "0123456789") keys[digit] = choose;
  window.Benchwright.shortcuts(keys);
  // Ctrl+Enter, and Enter in a select (a relabel field, the reason), work while in the field.
  window.Benchwright.shortcuts(
    {
      "ctrl+Enter": () => submit(),
      Enter: (event) => (event.target.tagName === "SELECT" ? enter({ target: document.body }) : false),
    },
    { inputs: true },
  );
  prefetch();
})();
