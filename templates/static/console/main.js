/* The support agents' console: a thin client of the agents' REST API. This entry module wires
 * the page's controls to the other modules, one concern each:
 *
 *   state.js         the shared state, constants and labels
 *   format.js        times, names, durations, status badges
 *   signals.js       what a part tells the parts above it, without importing them
 *   client.js        the signed-in API calls
 *   session.js       signing in and out
 *   inbox.js         the filtered, paged conversation list
 *   conversation.js  opening a conversation; its actions
 *   transcript.js    the open conversation's transcript, updated in place
 *   entries.js       the transcript's messages and notes as nodes
 *   composer.js      replying and private notes
 *   canned.js        canned responses and the "/" suggestions
 *   live.js          the live event stream
 *   alerts.js        the opt-in sound and desktop notification on a new handoff
 *
 * Text from the server or a customer only ever reaches the page through textContent and text
 * nodes (see `el` in ../shared/dom.js), never through HTML parsing: customers can type markup.
 */

import { bindAlerts } from "./alerts.js";
import { bindCanned } from "./canned.js";
import { bindComposer } from "./composer.js";
import { bindConversation } from "./conversation.js";
import { bindInbox } from "./inbox.js";
import { bindSession, restoreSession } from "./session.js";

bindInbox();
bindComposer();
bindSession();
bindConversation();
bindCanned();
bindAlerts();
restoreSession();
