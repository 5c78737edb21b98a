// Benchwright: small enhancements on top of htmx. Every page works without this file.
(function () {
  "use strict";

  // Deferred scripts (this one and the page's own) have run once "load" fires: mark the page so
  // browser tests know the keyboard shortcuts are listening before they press a key.
  window.addEventListener("load", function () {
    document.documentElement.dataset.ready = "1";
  });

  // Lightbox: links marked data-lightbox open their target image in a <dialog>.
  // Without JS the link simply opens the full image.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-lightbox]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    var dialog = document.getElementById("lightbox");
    if (!dialog || typeof dialog.showModal !== "function") return;
    event.preventDefault();
    var img = dialog.querySelector("img");
    img.src = link.href;
    img.alt = link.dataset.caption || "";
    dialog.querySelector(".lightbox-caption").textContent = link.dataset.caption || "";
    dialog.showModal();
  });

  // Close the lightbox when the backdrop or the image is clicked.
  document.addEventListener("click", function (event) {
    var dialog = document.getElementById("lightbox");
    if (dialog && dialog.open && (event.target === dialog || event.target.tagName === "IMG" && dialog.contains(event.target))) {
      dialog.close();
    }
  });

  // Forms marked data-confirm ask before they submit (here, not in an inline onsubmit: the
  // Content-Security-Policy runs no inline scripts).
  document.addEventListener("submit", function (event) {
    var question = event.target.dataset && event.target.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // Filter forms marked data-drop-empty leave blank fields out of the request, so the URL
  // pushed to the history reads ?status=verified rather than ?q=&status=verified&level=.
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.closest || !elt.closest("[data-drop-empty]")) return;
    var params = event.detail.parameters;
    Object.keys(params).forEach(function (key) {
      if (params[key] === "") delete params[key];
    });
  });

  // Upload progress for the file transfer of an htmx form.
  document.addEventListener("htmx:xhr:progress", function (event) {
    var form = event.target.closest && event.target.closest("form");
    var box = form && form.querySelector(".upload-progress");
    if (!box || !event.detail || !event.detail.total) return;
    var percent = Math.round((100 * event.detail.loaded) / event.detail.total);
    box.hidden = false;
    box.querySelector(".progress-bar").style.width = percent + "%";
    var label = box.querySelector(".upload-percent");
    if (label) label.textContent = percent < 100 ? percent + "%" : "done, reading the file…";
  });

  // htmx does not swap error responses: say what went wrong instead of doing nothing.
  function toast(message) {
    var box = document.getElementById("toast");
    if (!box) return;
    box.textContent = message;
    box.hidden = false;
    clearTimeout(box._timer);
    box._timer = setTimeout(function () { box.hidden = true; }, 6000);
  }
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var messages = {
      403: "You do not have permission to do that.",
      404: "Not found — it may have been removed, or it belongs to a project you are not in.",
    };
    toast(messages[xhr.status] || "Something went wrong (HTTP " + xhr.status + "). Please try again.");
  });
  document.addEventListener("htmx:sendError", function () {
    toast("The server could not be reached. Check your connection and try again.");
  });

  function closest(element, selector) {
    return element && element.closest ? element.closest(selector) : null;
  }

  // Error answers to show. htmx leaves 4xx unswapped; a page whose server answers a stale save
  // (409) or a draft with mistakes (400) with a fragment to show opts in with
  // data-swap-errors="409" (or "400 409") on the element the answer swaps into (after any
  // HX-Retarget) or on a container of the element that sent the request.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var status = detail.xhr && detail.xhr.status;
    if (!status || status < 400 || status > 499) return;
    var elt = detail.requestConfig && detail.requestConfig.elt;
    var box = closest(detail.target, "[data-swap-errors]") || closest(elt, "[data-swap-errors]");
    if (!box) return;
    var statuses = (box.getAttribute("data-swap-errors") || "400 409").split(/[\s,]+/);
    if (statuses.indexOf(String(status)) < 0) return;
    detail.shouldSwap = true;
    detail.isError = false;
  });

  // Keyboard shortcuts: one keydown listener for every page's keys.
  //
  //   Benchwright.shortcuts({ j: fn, M: fn, "ctrl+s": fn, "alt+ArrowUp": fn, n: "[data-key=n]" },
  //                         { scope: "form[data-audit]", inputs: ["ctrl+s"], repeat: ["j"] });
  //
  // A function is called with (event, scope element) and returns false when it did nothing: the
  // key then keeps its default and other shortcuts may take it; otherwise the default is
  // prevented. A string is a selector: the key clicks that button or link inside the scope.
  // scope: the keys work while such an element is on the page (the one holding the focus, else
  // the first) and act on it; without a scope they work on the whole page.
  // Keys are KeyboardEvent.key names. "ctrl" is Ctrl or Cmd. A character carries its own Shift
  // ("M" is Shift+m, "+" is "+" however it is typed), and one typed in upper case (Shift or Caps
  // Lock) falls back to its lower case when the upper case is not bound; other keys name Shift
  // ("shift+ArrowUp"). Modifiers must match: "j" does not fire with Ctrl, Alt or Cmd held.
  // While the focus is in a text field, select or contenteditable, or in a widget with keys of
  // its own (data-own-keys: the image editor), only the keys listed in inputs (or all, with
  // inputs: true) work, and Escape leaves the field so the others work again. A held key acts
  // once unless listed in repeat (or repeat: true).
  // Registering the same keys for the same scope again (a page swapped in by htmx runs its
  // script again) replaces the earlier registration.
  var NOT_TYPED = /^(button|checkbox|color|file|hidden|image|radio|range|reset|submit)$/i;

  function isField(element) {
    if (!element || element.nodeType !== 1) return false;
    var tag = element.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || element.isContentEditable ||
      (tag === "INPUT" && !NOT_TYPED.test(element.type));
  }

  function keyName(ctrl, alt, shift, key) {
    if (key.length === 1) shift = false; // the character says it
    return (ctrl ? "ctrl+" : "") + (alt ? "alt+" : "") + (shift ? "shift+" : "") + key;
  }

  function parseKey(spec) {
    var parts = spec.split("+");
    var key = parts.pop();
    if (key === "") { key = "+"; parts.pop(); } // "+" or "ctrl++"
    var mods = {};
    parts.forEach(function (part) {
      var mod = part.toLowerCase();
      if (mod === "meta" || mod === "cmd") mod = "ctrl";
      if (mod !== "ctrl" && mod !== "alt" && mod !== "shift") throw new Error("Unknown modifier in shortcut " + spec);
      mods[mod] = true;
    });
    return keyName(mods.ctrl, mods.alt, mods.shift, key);
  }

  function listed(option, spec) {
    return option === true || (Array.isArray(option) && option.indexOf(spec) >= 0);
  }

  function clicker(selector) {
    return function (event, scope) {
      var element = scope.matches(selector) ? scope : scope.querySelector(selector);
      if (!element || element.disabled) return false;
      element.click();
    };
  }

  var registrations = [];

  function shortcuts(keys, options) {
    options = options || {};
    var specs = Object.keys(keys);
    var registration = { scope: options.scope || "", bindings: {}, hasOutsideKeys: false };
    registration.id = registration.scope + "\n" + specs.slice().sort().join("\n");
    specs.forEach(function (spec) {
      var binding = {
        run: typeof keys[spec] === "string" ? clicker(keys[spec]) : keys[spec],
        inputs: listed(options.inputs, spec),
        repeat: listed(options.repeat, spec),
      };
      if (!binding.inputs) registration.hasOutsideKeys = true;
      registration.bindings[parseKey(spec)] = binding;
    });
    registrations = registrations.filter(function (r) { return r.id !== registration.id; });
    registrations.push(registration);
  }

  document.addEventListener("keydown", function (event) {
    var key = event.key;
    if (typeof key !== "string" || !key || event.isComposing) return;
    var target = event.target;
    var typing = isField(target) || Boolean(closest(target, "[data-own-keys]"));
    var ctrl = event.ctrlKey || event.metaKey;
    var names = [keyName(ctrl, event.altKey, event.shiftKey, key)];
    if (key.length === 1 && key !== key.toLowerCase()) names.push(keyName(ctrl, event.altKey, false, key.toLowerCase()));
    var leaveField = false;
    for (var i = 0; i < registrations.length; i++) {
      var registration = registrations[i];
      var scope = registration.scope
        ? closest(target, registration.scope) || document.querySelector(registration.scope)
        : document.documentElement;
      if (!scope) continue;
      if (registration.hasOutsideKeys) leaveField = true;
      var binding = registration.bindings[names[0]] || (names[1] && registration.bindings[names[1]]);
      if (!binding || (typing && !binding.inputs)) continue;
      if (event.repeat && !binding.repeat) {
        event.preventDefault();
        return;
      }
      if (binding.run(event, scope) !== false) {
        event.preventDefault();
        return;
      }
    }
    if (key === "Escape" && leaveField && isField(target) && !ctrl && !event.altKey && !event.shiftKey) target.blur();
  });

  // ---- Scrollable boxes reachable by keyboard (issue 25, finding 12) ----
  // A box that scrolls (a wide table on a small screen, a long raw record) and holds nothing
  // focusable gets tabindex="0", so a keyboard user can focus it and scroll it with the arrow
  // keys. Checked on load, after htmx swaps and when the window changes size.
  var FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";
  function scrolls(box) {
    var style = window.getComputedStyle(box);
    var sideways = /auto|scroll/.test(style.overflowX) && box.scrollWidth > box.clientWidth + 1;
    var down = /auto|scroll/.test(style.overflowY) && box.scrollHeight > box.clientHeight + 1;
    return sideways || down;
  }
  // After an htmx swap only the swapped-in part (and the box around it) is checked: the rest of
  // the page did not change, and each check reads the box's layout.
  var SCROLLER = ".table, .table-card, .judgments, pre, .code, [data-scrolls]";
  function markScrollers(root) {
    var scope = root && root.nodeType === 1 ? root : document;
    var boxes = Array.prototype.slice.call(scope.querySelectorAll(SCROLLER));
    var around = scope !== document && scope.closest(SCROLLER);
    if (around) boxes.push(around);
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      if (box.dataset.scrollFocus === "1") {
        if (!scrolls(box)) { box.removeAttribute("tabindex"); delete box.dataset.scrollFocus; }
        continue;
      }
      if (box.hasAttribute("tabindex") || !scrolls(box) || box.querySelector(FOCUSABLE)) continue;
      box.setAttribute("tabindex", "0");
      box.dataset.scrollFocus = "1";
    }
  }
  var resizeTimer = null;
  window.addEventListener("load", function () { markScrollers(document); });
  document.addEventListener("htmx:afterSettle", function (event) { markScrollers(event.target); });
  window.addEventListener("resize", function () {
    window.clearTimeout(resizeTimer);
    resizeTimer = window.setTimeout(function () { markScrollers(document); }, 150);
  });

  window.Benchwright = { shortcuts: shortcuts };

  // The keys overlay (issue 25): ? (Shift+/) opens the <dialog id="keys-help"> of base.html
  // listing the keys of the current screen, copied from every visible element marked
  // data-keys-help (each screen's own "Keys: ..." line; a non-empty value names the group).
  // Escape (the dialog's own) or ? again closes it. Like every shortcut, ? is text in a field.
  function keysHelp() {
    var dialog = document.getElementById("keys-help");
    if (!dialog || typeof dialog.showModal !== "function") return false;
    if (dialog.open) {
      dialog.close();
      return;
    }
    var list = dialog.querySelector(".keys-help-list");
    list.replaceChildren();
    document.querySelectorAll("[data-keys-help]").forEach(function (line) {
      if (dialog.contains(line) || !line.getClientRects().length) return; // hidden: not this screen's
      if (line.dataset.keysHelp) {
        var title = document.createElement("h3");
        title.textContent = line.dataset.keysHelp;
        list.appendChild(title);
      }
      var copy = document.createElement("p");
      line.childNodes.forEach(function (node) { copy.appendChild(node.cloneNode(true)); });
      copy.querySelectorAll("[id]").forEach(function (node) { node.removeAttribute("id"); });
      list.appendChild(copy);
    });
    dialog.querySelector(".keys-help-none").hidden = list.children.length > 0;
    dialog.showModal();
  }
  shortcuts({ "?": keysHelp });
})();

// ---- h-ui (issue 25, finding 9): a select whose options belong to another select's values
// (an intent to its categories) shows only the options of the chosen parent value. The select
// names its parent by id in data-parent-select; each option lists its parents in
// data-parents ("a|b"). A chosen option that no longer fits is cleared.
(function () {
  "use strict";
  function follow(child) {
    var parent = document.getElementById(child.dataset.parentSelect);
    if (!parent) return;
    var value = parent.value;
    Array.prototype.forEach.call(child.options, function (option) {
      var parents = option.dataset.parents ? option.dataset.parents.split("|") : [];
      option.hidden = Boolean(value && parents.length && parents.indexOf(value) < 0);
      option.disabled = option.hidden;
    });
    var chosen = child.options[child.selectedIndex];
    if (chosen && chosen.hidden) child.value = "";
  }
  function followAll(root) {
    (root || document).querySelectorAll("select[data-parent-select]").forEach(follow);
  }
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (!target || !target.id) return;
    document.querySelectorAll('select[data-parent-select="' + target.id + '"]').forEach(follow);
  }, true);
  document.addEventListener("DOMContentLoaded", function () { followAll(document); });
  document.addEventListener("htmx:afterSettle", function (event) { followAll(event.target); });
})();
