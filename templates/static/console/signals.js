/* What one part of the console tells the parts above it, without importing them. A part
 * signals; the parts that care listen (they import the signaller, never the other way).
 *
 *   unauthorized         (message)     the token stopped working: the session ends
 *   conversation-chosen  (id)          an inbox row was picked
 *   transcript-shown     (transcript)  the open conversation was drawn, or drawn again
 *   agent-unknown        (id)          an agent's name is not known yet
 */

const listeners = new Map();

export function listen(name, listener) {
  if (!listeners.has(name)) listeners.set(name, []);
  listeners.get(name).push(listener);
}

export function signal(name, detail) {
  for (const listener of listeners.get(name) || []) listener(detail);
}
