// The dashboard's shell: picks the page for the path, keeps links inside the page (history
// API), shows who is logged in, logs out with the CSRF token.

import { me, post } from "./api.js";
import { fill, h } from "./dom.js";
import { mountOverview } from "./overview.js";
import { mountRun } from "./run.js";
import { mountRuns } from "./runs.js";

const main = document.getElementById("main");
let unmount = () => {};

function route(path) {
  const run = /^\/runs\/([^/]+)\/?$/.exec(path);
  if (run) return { nav: "runs", mount: (el) => mountRun(el, decodeURIComponent(run[1])) };
  if (path === "/overview") return { nav: "overview", mount: mountOverview };
  return { nav: "runs", mount: mountRuns };
}

function show() {
  unmount();
  const page = route(location.pathname);
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === page.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  fill(main);
  unmount = page.mount(main) || (() => {});
}

/** Go to an internal path without reloading the page. */
export function navigate(path) {
  if (path === location.pathname + location.search) return;
  history.pushState(null, "", path);
  show();
  main.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith("/static/")) return;
  if (link.hasAttribute("download") || link.target) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener("popstate", show);

document.getElementById("logout").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await post("/logout");
  } catch {
    // the session may be gone already: the login page is where we go either way
  }
  location.assign("/login");
});

me()
  .then(({ role }) => {
    document.body.dataset.role = role;
    fill(document.getElementById("who"), h("span", { class: "role" }, `role: ${role}`));
  })
  .catch(() => {});

show();
