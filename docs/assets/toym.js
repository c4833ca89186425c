// The embedded step viewers (iframe.toym-live) take the height of their content, so nothing in them is
// clipped and the page, not the frame, scrolls. The pages' inline height stays where the frame's document
// cannot be read (a page opened from file://).
(function () {
  function fit(frame) {
    var doc;
    try { doc = frame.contentDocument; } catch (e) { return; }
    if (!doc || !doc.body) return;
    var height = doc.documentElement.scrollHeight;
    if (height > 0 && Math.abs(frame.getBoundingClientRect().height - height) > 1) frame.style.height = height + "px";
  }
  function watch(frame) {
    var observe = function () {
      fit(frame);
      try {
        if (window.ResizeObserver && frame.contentDocument && frame.contentDocument.body) {
          new ResizeObserver(function () { fit(frame); }).observe(frame.contentDocument.body);
        }
      } catch (e) { /* another origin: keep the inline height */ }
    };
    frame.addEventListener("load", observe);
    if (frame.contentDocument && frame.contentDocument.readyState === "complete") observe();
  }
  function start() { document.querySelectorAll("iframe.toym-live").forEach(watch); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
