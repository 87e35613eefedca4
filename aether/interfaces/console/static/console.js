// aether console: the CSRF token on every htmx request, and live conversation messages.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";
  document.body.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRF-Token"] = csrf;
  });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.elt && event.detail.elt.id === "send-form" && event.detail.successful) {
      event.detail.elt.querySelector("textarea").value = "";
    }
  });
  var box = document.getElementById("messages");
  if (box) { box.scrollTop = box.scrollHeight; }  // the newest message in view on open
  if (box && window.EventSource) {
    var source = new EventSource(box.getAttribute("data-stream"));
    source.addEventListener("message", function (event) {
      // the server renders (and escapes) the fragment
      var holder = document.createElement("div");
      holder.innerHTML = event.data;
      while (holder.firstChild) { box.appendChild(holder.firstChild); }
      box.scrollTop = box.scrollHeight;
    });
  }
})();
