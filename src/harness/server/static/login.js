// The login form, sent with fetch so that a refused token shows an error in place; without
// JavaScript the form posts the same way.

const form = document.getElementById("login-form");
const error = document.getElementById("login-error");

function next() {
  const target = new URLSearchParams(location.search).get("next") || "/";
  // Only a path of this site: never "//elsewhere" or "https://elsewhere".
  return target.startsWith("/") && !target.startsWith("//") && !target.startsWith("/\\") ? target : "/";
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.hidden = true;
  const button = form.querySelector("button");
  button.disabled = true;
  try {
    const response = await fetch("/login", {
      method: "POST",
      body: new URLSearchParams({ token: form.token.value }),
      credentials: "same-origin",
    });
    if (response.ok || response.redirected) {
      location.assign(next());
      return;
    }
    error.textContent = response.status === 401
      ? "That token was not accepted."
      : `Could not log in (HTTP ${response.status}).`;
    error.hidden = false;
    form.token.select();
  } catch (failure) {
    error.textContent = `Could not reach the server: ${failure.message}`;
    error.hidden = false;
  } finally {
    button.disabled = false;
  }
});
