/* One sign-in for the console and the admin page.
 *
 * An agent's API token is checked against /api/v1/me and kept in this tab's sessionStorage
 * (../shared/api.js holds the key): both pages read it there, so it is pasted once per tab and
 * is gone when the tab closes. The server keeps only its SHA-256 digest. A bearer header, not
 * a cookie, carries it: the browser never sends it by itself, so no other site can make a
 * signed-in request (no CSRF to defend against), and the pages' content security policy (no
 * inline or foreign scripts) keeps other code from reading it.
 */

import { ApiError, forgetToken, keepToken, request } from "./api.js";

/* The agent the token belongs to, once it is kept; `admin` refuses (and does not keep) an
 * agent's token, so a page for admins does not sign the tab in as someone it turns away. */
export async function signIn(token, { admin = false } = {}) {
  token = token.trim();
  if (!token) throw new ApiError(400, "Enter your API token.");
  // A header cannot carry other characters; fetch would fail as if the server were down.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new ApiError(400, "An API token is one word of plain letters, digits and punctuation.");
  }
  const me = await request("/api/v1/me", { token });
  if (admin && me.role !== "admin") {
    throw new ApiError(403, `${me.name} is an agent: this page needs an admin's API token.`);
  }
  keepToken(token);
  return me;
}

export const signOut = forgetToken;
