// The item list's bulk actions (templates/benchmark/project_detail.html, annotation.bulk_actions):
// select rows by hand (checkboxes; Shift+click selects the range from the last one clicked;
// "select all on this page"; x toggles the focused row, j / k move between rows) or all items
// matching the filters, and show only the fields the chosen action needs. Works on the page and
// on every item list htmx swaps in (listeners on the document).
(function () {
  "use strict";
  if (window.BenchwrightBulk) return;
  var last = null; // the checkbox clicked last, for Shift+click ranges

  function form() { return document.querySelector("[data-bulk-form]"); }
  function boxes() { return Array.prototype.slice.call(document.querySelectorAll("input.bulk-check")); }

  function refresh() {
    var f = form();
    if (!f) return;
    var all = boxes();
    var checked = all.filter(function (b) { return b.checked; }).length;
    var count = f.querySelector("[data-bulk-count]");
    var matching = f.querySelector("input[name=scope][value=matching]");
    var byHand = f.querySelector("input[name=scope][value=selected]");
    if (checked && byHand && matching && matching.checked) byHand.checked = true;
    if (count) {
      count.textContent = matching && matching.checked
        ? "All " + f.getAttribute("data-match-count") + " matching items"
        : checked + " selected";
    }
    var head = document.querySelector("[data-bulk-all]");
    if (head) {
      head.checked = all.length > 0 && checked === all.length;
      head.indeterminate = checked > 0 && checked < all.length;
    }
    all.forEach(function (b) {
      var row = b.closest("tr");
      if (row) row.classList.toggle("bulk-selected", b.checked);
    });
  }

  function showFields() {
    var f = form();
    if (!f) return;
    var select = f.querySelector("select[name=action]");
    var action = select ? select.value : "";
    f.querySelectorAll("[data-bulk-for]").forEach(function (el) {
      var wanted = el.getAttribute("data-bulk-for").split(" ");
      el.hidden = !action || wanted.indexOf(action) < 0;
    });
  }

  document.addEventListener("click", function (event) {
    var box = event.target;
    if (!(box instanceof HTMLInputElement) || !box.classList.contains("bulk-check")) return;
    var all = boxes();
    if (event.shiftKey && last && all.indexOf(last) >= 0) {
      var a = all.indexOf(last);
      var b = all.indexOf(box);
      var from = Math.min(a, b);
      var to = Math.max(a, b);
      for (var i = from; i <= to; i++) all[i].checked = box.checked;
    }
    last = box;
    refresh();
  });

  document.addEventListener("change", function (event) {
    var el = event.target;
    if (!(el instanceof HTMLElement)) return;
    if (el.hasAttribute("data-bulk-all")) {
      boxes().forEach(function (b) { b.checked = el.checked; });
      last = null;
    }
    if (el.getAttribute("name") === "scope" && el.value === "matching") {
      boxes().forEach(function (b) { b.checked = false; });
    }
    if (el.getAttribute("name") === "action") showFields();
    refresh();
  });

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("tr[data-bulk-row]")); }

  function focusedRow() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("tr[data-bulk-row]") : null;
  }

  function move(step) {
    var all = rows();
    if (!all.length) return false;
    var at = all.indexOf(focusedRow());
    var next = all[Math.max(0, Math.min(all.length - 1, at < 0 ? 0 : at + step))];
    next.focus();
  }

  function init() {
    showFields();
    refresh();
  }

  window.Benchwright.shortcuts({
    x: function () {
      var row = focusedRow();
      var box = row && row.querySelector("input.bulk-check");
      if (!box) return false;
      box.checked = !box.checked;
      last = box;
      refresh();
    },
    j: function () { return move(1); },
    k: function () { return move(-1); },
  }, { scope: "#item-list" });

  document.addEventListener("htmx:afterSettle", init);
  window.BenchwrightBulk = { refresh: refresh };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
