/* Calls to prefixdesk's JSON API with a bearer token, shared by the console and the admin page.
 *
 * The signed-in token is kept in this tab's sessionStorage under one key, so signing in on
 * either page signs the tab in on both (see ./signin.js); a call without a token of its own
 * sends that one.
 *
 * A refusal comes back as {"error": code, "detail": message}; it is thrown as an ApiError whose
 * message is the detail, so it can be shown as it is. A server that cannot be reached is an
 * ApiError with status 0.
 */

// The key the console has always kept its token under: a tab signed in before stays signed in.
export const TOKEN_KEY = "prefixdesk.console.token";

export const savedToken = () => sessionStorage.getItem(TOKEN_KEY);
export const keepToken = (token) => sessionStorage.setItem(TOKEN_KEY, token);
export const forgetToken = () => sessionStorage.removeItem(TOKEN_KEY);

export class ApiError extends Error {
  constructor(status, detail, code = "") {
    super(detail);
    this.name = "ApiError";
    this.status = status;
    this.detail = detail;
    this.code = code;
  }
}

// The JSON answer to `path` (null for 204 No Content); `body`, when given, is sent as JSON;
// `token` defaults to the tab's signed-in one.
export async function request(path, { method = "GET", body, token = savedToken() } = {}) {
  const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, "The server cannot be reached; check the connection and try again.");
  }
  let payload = null;
  if (response.status !== 204) {
    try {
      payload = await response.json();
    } catch {
      payload = null;
    }
  }
  if (!response.ok) {
    const detail =
      payload && typeof payload.detail === "string"
        ? payload.detail
        : `The server answered ${response.status} ${response.statusText}.`;
    const code = payload && typeof payload.error === "string" ? payload.error : "";
    throw new ApiError(response.status, detail, code);
  }
  return payload;
}
