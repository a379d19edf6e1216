/* The optional reply checks dropped while the desk was busy (backend/turns/shedding.py), in
   the order they are shed: the samples first, the handoff judge last. */

import { fmt } from "./format.js";
import { setTile } from "./tiles.js";

const ORDER = ["samples", "supported", "sources", "line", "unanswered", "handoff"];

export function showShed(shed, windowName) {
  const counts = ORDER.filter((check) => shed[check]).map((check) => `${check} ${fmt.num(shed[check])}`);
  const total = Object.values(shed).reduce((sum, n) => sum + n, 0);
  const sub = counts.length ? `in ${windowName}: ${counts.join(" · ")}` : "none: every check ran";
  setTile("checks-shed", fmt.num(total), sub);
}
