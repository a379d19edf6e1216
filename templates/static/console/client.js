/* The signed-in calls to the agents' API. A 401 means the token was revoked meanwhile: the
 * session ends (the `unauthorized` signal). */

import { ApiError, request } from "../shared/api.js";
import { signal } from "./signals.js";
import { state } from "./state.js";

export async function api(path, options = {}) {
  try {
    return await request(path, { token: state.token, ...options });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && state.token) {
      signal("unauthorized", `Signed out: ${error.detail}`);
    }
    throw error;
  }
}

export const conversationPath = (id, suffix = "") => `/api/v1/conversations/${encodeURIComponent(id)}${suffix}`;
