/* Alerts on a new handoff, for agents who opt in: a short tone and a desktop notification
 * (the Notification API; clicking it opens the conversation). The choice is kept in this
 * browser's localStorage; the browser asks for the notification permission when it is turned on. */

import { $ } from "../shared/dom.js";
import { signal } from "./signals.js";
import { ALERTS_KEY, announce } from "./state.js";

let audio = null; // made on the agent's click: browsers only let a page play sound after one

const enabled = () => localStorage.getItem(ALERTS_KEY) === "on";

function render() {
  const on = enabled();
  const button = $("alerts-toggle");
  button.setAttribute("aria-pressed", String(on));
  button.textContent = on ? "Alerts on" : "Alerts off";
  button.title = on
    ? "A sound and a desktop notification when a customer is handed to a person"
    : "Turn on a sound and a desktop notification for new handoffs";
}

async function toggle() {
  const on = !enabled();
  localStorage.setItem(ALERTS_KEY, on ? "on" : "off");
  render();
  if (!on) {
    announce("Handoff alerts off.");
    return;
  }
  audio ??= new AudioContext();
  if ("Notification" in window && Notification.permission === "default") await Notification.requestPermission();
  const desktop = "Notification" in window && Notification.permission === "granted";
  announce(desktop ? "Handoff alerts on." : "Handoff alerts on: sound only, desktop notifications are blocked.");
}

function playTone() {
  audio ??= new AudioContext();
  if (audio.state === "suspended") audio.resume().catch(() => {});
  const oscillator = audio.createOscillator();
  const gain = audio.createGain();
  oscillator.frequency.value = 880;
  gain.gain.setValueAtTime(0.2, audio.currentTime);
  gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.4);
  oscillator.connect(gain).connect(audio.destination);
  oscillator.start();
  oscillator.stop(audio.currentTime + 0.4);
}

// A customer was handed to a person (`conversation.handoff_requested`).
export function alertHandoff(conversationId, reason) {
  if (!enabled()) return;
  try {
    playTone();
  } catch {
    // No audio output: the notification still goes out.
  }
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  const notification = new Notification("A customer needs a person", {
    body: reason === "customer_request" ? "They asked for a person." : "The bot handed the conversation over.",
    tag: `handoff-${conversationId}`,
  });
  notification.addEventListener("click", () => {
    window.focus();
    signal("conversation-chosen", conversationId);
    notification.close();
  });
}

export function bindAlerts() {
  render();
  $("alerts-toggle").addEventListener("click", toggle);
}
