// The API client of the dashboard: same-origin fetches with the session cookie, the CSRF
// header on every state-changing request, problem+json errors as ApiError.

let mePromise = null;

/** An API answer that was not 2xx, with the problem document's title and detail. */
export class ApiError extends Error {
  constructor(status, title, detail) {
    super(detail || title || `HTTP ${status}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

function toLogin() {
  const next = encodeURIComponent(location.pathname + location.search);
  location.assign(`/login?next=${next}`);
}

async function problem(response) {
  let title = response.statusText;
  let detail = "";
  try {
    const body = await response.json();
    title = body.title || title;
    detail = body.detail || "";
  } catch {
    // not a problem document: the status line says it
  }
  return new ApiError(response.status, title, detail);
}

/** Who is logged in: {role, csrf}, asked once per page. */
export function me() {
  if (!mePromise) {
    mePromise = request("GET", "/api/me").catch((error) => {
      mePromise = null;
      throw error;
    });
  }
  return mePromise;
}

/** Whether `role` may steer runs (pause, resume, cancel, approve, deny). */
export function canOperate(role) {
  return role === "operate" || role === "admin";
}

/** GET a JSON document from the API. */
export function get(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  }
  const suffix = query.toString();
  return request("GET", suffix ? `${path}?${suffix}` : path);
}

/** POST `body` as JSON, with the session's CSRF token. */
export async function post(path, body) {
  const { csrf } = await me();
  return request("POST", path, body === undefined ? {} : body, csrf);
}

async function request(method, path, body, csrf) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  if (csrf) headers["X-CSRF-Token"] = csrf;
  const response = await fetch(path, init);
  if (response.status === 401) {
    toLogin();
    throw new ApiError(401, "Unauthorized", "log in again");
  }
  if (!response.ok) throw await problem(response);
  const type = response.headers.get("Content-Type") || "";
  if (response.status === 204 || !type.includes("json")) return null;
  return response.json();
}
