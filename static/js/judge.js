// Judge page (and the blind-solve page): time on item, the next item held ahead, and the keys
// shown on the page:
//   digits   pick a choice (the key shown by each; on a binary or 0-2 scale the pick submits)
//   Enter    submit once a choice is picked (outside a text field; in the comment it is a
//            new line), Ctrl+Enter submit from anywhere, the comment included
//   c r e i o p  move to the field whose label shows the key (comment, reason, relabel)
//   n next, u undo the last judgment
// The judging area is swapped in place by htmx after a submit (the next item), so everything
// here looks the form up when a key is pressed, and the timer starts again on each swap.
//
// The next item, ahead (issue 25, finding 3): while an item is judged under a live lease its
// judging area names data-ahead-url, and the item after it is leased and its judging area
// fetched and held here, out of the page (a <template>'s content: not shown, not focusable).
// On submit, once the form is valid and the item held is fresh (its lease has more than half
// its length left), that area is shown at once (URL, title, timer, the
// "benchwright:judging-shown" event) and the judgment is sent in the background, one at a
// time and in order (a second Enter waits for the first). Its answer updates the progress
// line and the undo paragraph, and holds the item leased ahead of the one now shown. A refusal puts the judged item back, with the server's errors
// and the input sent, and a network failure puts back the item as it was left; either way
// with "Your judgment of … was not saved: …", and the item ahead is held again as it is.
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
    // The server showed the item held ahead (its oldest open lease): it is held no longer.
    if (held && area && area.dataset.itemKey === held.key) held = null;
    prefetch();
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const active = document.activeElement;
    if (swappedIn(event) && active && event.detail.target.contains(active)) active.blur();
  });

  // ------------------------------------------------------------------ the item held ahead

  let held = null; // {node, key, url, title, receivedAt, left, total}
  let prefetching = null; // the request for it, while in flight
  let sending = 0; // judgments sent in the background and not answered yet
  let pending = Promise.resolve(); // settles once the last one is answered (and the next held)

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

  // The thumbnails of the item held ahead go into the browser's cache now.
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

  // Hold the judging area in ``fragment`` (a template's content), whose URL is ``url``.
  function hold(url, fragment) {
    const node = fragment.getElementById("judging");
    const area = judging();
    if (!node || (area && area.dataset.itemKey === node.dataset.itemKey)) return;
    const title = fragment.querySelector("title");
    held = {
      node,
      key: node.dataset.itemKey,
      url: url || location.href,
      title: title ? title.textContent : document.title,
      receivedAt: performance.now(),
      left: Number(node.dataset.leaseLeft || 0),
      total: Number(node.dataset.leaseTotal || 0),
    };
    nameImages(held.node);
    if (area) area.dataset.aheadHeld = held.key; // what the page holds ahead of this item
  }

  function parse(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content;
  }

  // Lease the item after the one on screen and hold its judging area (204: nothing is left;
  // anything else: the next submit goes the usual way).
  function prefetch() {
    const area = judging();
    const url = area && area.dataset.aheadUrl;
    if (!url || held || prefetching || !form()) return prefetching || Promise.resolve();
    prefetching = fetch(url, { method: "POST", credentials: "same-origin", redirect: "manual", headers: headers() })
      .then((response) =>
        response.status === 200
          ? response.text().then((html) => hold(response.headers.get("HX-Push-Url"), parse(html)))
          : undefined,
      )
      .catch(() => undefined)
      .finally(() => {
        prefetching = null;
      });
    return prefetching;
  }

  // Show a judging area in place of the one on screen.
  function show(node, url, title, since, from) {
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
    document.dispatchEvent(new CustomEvent("benchwright:judging-shown", { detail: { area: node, from } }));
  }

  const itemName = (area) => {
    const h1 = area.querySelector("h1");
    return h1 ? h1.textContent.trim() : "this item";
  };

  // The answer to a judgment sent in the background: the progress line and the undo paragraph
  // of the item now shown (when it still is), and the item leased ahead of that one (held;
  // an empty template: nothing is left). Whether it said anything about the item ahead.
  function saved(response, html, key) {
    const answer = parse(html);
    const next = answer.getElementById("ahead-next");
    if (next) {
      next.remove();
      hold(response.headers.get("HX-Push-Url"), next.content);
    }
    const area = judging();
    if (!area || area.dataset.itemKey !== key) return Boolean(next);
    for (const part of [...answer.children]) {
      const old = part.id && document.getElementById(part.id);
      if (!old || part.tagName === "TITLE") continue;
      old.replaceWith(part);
      if (window.htmx) window.htmx.process(part);
    }
    return Boolean(next);
  }

  function reason(response, node) {
    if (!response) return "the server could not be reached (check the connection)";
    if (response.type === "opaqueredirect") return "you are no longer logged in (log in again in another tab)";
    const errors = node ? [...node.querySelectorAll(".alert-error")].map((e) => e.textContent.trim()) : [];
    return errors.filter(Boolean).join(" ") || `the server refused it (HTTP ${response.status})`;
  }

  // A refusal answered with a whole page (403: the lease is no longer this person's): its reason.
  function pageReason(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    const box = holder.content.getElementById("error-reason");
    return box ? box.textContent.trim().replace(/\.$/, "") : "";
  }

  // A judgment sent in the background was not saved: put its item back (the server's area
  // with its errors, else the area as it was left), say so, and hold the item ahead again.
  function putBack(kept, ahead, response, html) {
    let node = null;
    if (response && [400, 403, 409].includes(response.status)) {
      const holder = document.createElement("template");
      holder.innerHTML = html;
      node = holder.content.getElementById("judging");
      if (node && node.dataset.itemKey !== kept.node.dataset.itemKey) node = null;
    }
    const why = (!node && response && response.status === 403 && pageReason(html)) || reason(response, node);
    node = node || kept.node;
    const area = judging();
    if (area === ahead.node) held = ahead; // as it is, with anything typed into it
    for (const old of node.querySelectorAll("#not-saved")) old.remove();
    const message = document.createElement("p");
    message.id = "not-saved";
    message.className = "alert alert-error";
    message.setAttribute("role", "alert");
    message.textContent = `Your judgment of ${kept.name} was not saved: ${why}. Press Enter to send it again.`;
    const card = node.querySelector("#judge-form") || node;
    card.prepend(message);
    show(node, kept.url, kept.title, kept.started, "put back");
  }

  function send(f, ahead) {
    const kept = { node: judging(), url: location.href, title: document.title, started, name: itemName(judging()) };
    const body = new FormData(f);
    const t0 = performance.now();
    sending += 1;
    const request = fetch(f.action, {
      method: "POST",
      body,
      credentials: "same-origin",
      redirect: "manual",
      headers: headers({ "X-Benchwright-Ahead": ahead.key }),
    });
    pending = request
      .then(
        (response) =>
          response.text().then((html) => {
            const ok = response.status === 200 && response.headers.get("X-Judgment-Saved") === "1";
            if (!ok) putBack(kept, ahead, response, html);
            return ok && { answered: saved(response, html, ahead.key) };
          }),
        () => {
          putBack(kept, ahead, null, "");
          return false;
        },
      )
      .then((ok) => {
        sending -= 1;
        const detail = { ms: performance.now() - t0, ok: Boolean(ok) };
        document.dispatchEvent(new CustomEvent("benchwright:judgment-sent", { detail }));
        // The answer held the next item ahead (or said none is left); else ask for it.
        return ok && !ok.answered ? prefetch() : undefined;
      });
    return kept;
  }

  // The item held ahead on screen at once, the judgment sent behind it.
  function swapAhead(f) {
    const seconds = f.querySelector("input[name=seconds]");
    if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    const ahead = held;
    held = null;
    send(f, ahead);
    show(ahead.node, ahead.url, ahead.title, performance.now(), "prefetch");
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
    if (sending) {
      // A judgment is on its way: this one goes once it is answered (in order, one per item).
      pending.then(() => {
        if (!document.contains(f)) return; // its item was put back behind the refused one
        delete f.dataset.sending;
        submit();
      });
      return undefined;
    }
    if (!held && prefetching) {
      // The item ahead is on its way: sooner than asking the server for the next one.
      prefetching.then(() => {
        if (!document.contains(f)) return;
        delete f.dataset.sending;
        submit();
      });
      return undefined;
    }
    if (held && !fresh(held)) held = null;
    const changing = f.querySelector("input[name=version]");
    if (held && judging().dataset.aheadUrl && !(changing && changing.value)) {
      swapAhead(f);
      return undefined;
    }
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
      if (f.id !== "judgment" || f.dataset.sending || (!held && !sending)) return;
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
