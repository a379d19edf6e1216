/* How the audit log reads to people: when an entry was written, and what its details say, in
 * the terms of the form that caused it. An export's range is kept as the API takes it (whole UTC
 * days, the end exclusive); the export form asks for the last day included, so the log shows
 * that day too: an export "to 4 Dec (inclusive)" reads "to 4 Dec 2025 (inclusive)". */

const DAY_MS = 86400000;
const utcDay = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" });
const localMoment = new Intl.DateTimeFormat("en-GB", { dateStyle: "medium", timeStyle: "medium" });

export const written = (iso) => localMoment.format(new Date(iso));

const isMidnightUtc = (date) => date.getTime() % DAY_MS === 0;

// An export's range as its form had it: "4 Dec 2025 to 4 Dec 2025 (inclusive, UTC days)".
export function exportRange(start, end) {
  const from = new Date(start);
  const to = new Date(end);
  if (isMidnightUtc(from) && isMidnightUtc(to) && to > from) {
    return `${utcDay.format(from)} to ${utcDay.format(new Date(to - DAY_MS))} (inclusive, UTC days)`;
  }
  return `from ${localMoment.format(from)} until ${localMoment.format(to)} (exclusive)`; // not by the form
}

const agent = (names, id) => (id == null ? "someone" : names.get(id) ?? `agent ${id}`);

const DESCRIBE = {
  "conversation.take_over": (d) => (d.by_reply ? "by replying" : ""),
  "conversation.assign": (d, names) => `to ${agent(names, d.assignee_id)}`,
  "transcripts.export": (d) =>
    [exportRange(d.start, d.end), String(d.format || "").toUpperCase(), d.bot ? `bot ${d.bot}` : "every bot"]
      .filter(Boolean)
      .join(" · "),
  "conversations.erase": (d) => `matched by ${d.matched_by}`,
  "token.create": (d, names) => `for ${agent(names, d.agent_id)} (${d.display_prefix}…)`,
  "token.revoke": (d, names) => `of ${agent(names, d.agent_id)}`,
  "agent.create": (d) => `${d.name} (${d.role})`,
  "widget_origin.add": (d) => d.origin,
  "widget_origin.remove": (d) => d.origin,
  "prompts.reload": (d) => (d.changed && d.changed.length ? `changed: ${d.changed.join(", ")}` : "no bot changed"),
  "webhook.create": (d) => (d.host ? `to ${d.host}` : ""),
};

const listed = (details) =>
  Object.entries(details)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => `${key}: ${value}`)
    .join(", ");

// The details of one entry as a sentence fragment; `names` maps agent ids to their names.
export function describe(entry, names) {
  const details = entry.details || {};
  const known = DESCRIBE[entry.action];
  try {
    return known ? known(details, names) : listed(details);
  } catch {
    return listed(details); // written by another version, with other details
  }
}
