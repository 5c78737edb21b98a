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
})();
