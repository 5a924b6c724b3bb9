/// The status page `GET /` serves: one file, no build step, nothing fetched from elsewhere (a rack has no
/// internet). It reads `/events` (server-sent events of `StatusPageState`) and draws the jam: who leads, the tempo
/// and the beat, a meter per player and the session's total, the drums, the peers and the devices; with
/// `control`, start, stop and tempo buttons that post to `/control`. Names come from the network, so the page
/// sets text only, never markup.
enum StatusPageHTML {
    static let page = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jambridge</title>
<style>
  :root { color-scheme: dark; font-family: system-ui, sans-serif; background: #15171a; color: #e8e8e8; }
  body { margin: 0 auto; max-width: 44rem; padding: 1rem; }
  h1 { font-size: 1.2rem; margin: 0 0 .5rem; display: flex; justify-content: space-between; }
  h2 { font-size: .8rem; text-transform: uppercase; letter-spacing: .08em; color: #9aa0a6; margin: 1.2rem 0 .4rem; }
  #connection { font-size: .8rem; font-weight: normal; color: #f28b82; }
  #connection.live { color: #81c995; }
  .big { font-size: 1.6rem; font-weight: 600; }
  .row { display: flex; gap: 1.5rem; flex-wrap: wrap; align-items: baseline; }
  .meter { display: grid; grid-template-columns: 9rem 1fr 2.5rem; gap: .5rem; align-items: center; margin: .25rem 0; }
  .meter .name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .meter .bar { height: .9rem; background: #2a2d31; border-radius: .2rem; overflow: hidden; }
  .meter .fill { display: block; height: 100%; width: 0; background: #8ab4f8; transition: width .15s; }
  #total .fill { background: #fdd663; }
  .meter .value { text-align: right; font-variant-numeric: tabular-nums; }
  #beats { display: flex; gap: .4rem; }
  #beats span { width: 1.1rem; height: 1.1rem; border-radius: 50%; background: #2a2d31; }
  #beats span.on { background: #81c995; }
  ul { list-style: none; padding: 0; margin: 0; }
  li { padding: .2rem 0; border-bottom: 1px solid #2a2d31; }
  .dim { color: #9aa0a6; }
  button { font-size: 1rem; padding: .5rem 1rem; margin-right: .5rem; border-radius: .3rem; border: 0; background: #3c4043; color: #e8e8e8; }
  input { width: 4.5rem; font-size: 1rem; padding: .45rem; }
  #reply { margin-top: .4rem; color: #9aa0a6; }
</style>
</head>
<body>
<h1><span>jambridge</span><span id="connection">connecting</span></h1>

<div class="row">
  <div><div class="dim">role</div><div class="big" id="role">-</div></div>
  <div><div class="dim">clock master</div><div class="big" id="master">-</div></div>
  <div><div class="dim">tempo</div><div class="big" id="tempo">-</div></div>
  <div><div class="dim">bar</div><div class="big" id="bar">-</div></div>
  <div><div class="dim">beat</div><div class="big" id="beat">-</div></div>
</div>
<div id="beats"></div>
<div id="link" class="dim" hidden></div>

<div id="controls" hidden>
  <h2>Control</h2>
  <button id="start">Start</button><button id="stop">Stop</button>
  <input id="bpm" type="number" min="20" max="300" step="1" value="120"> <button id="setTempo">Set tempo</button>
  <div id="reply"></div>
</div>

<h2>Activity</h2>
<div class="meter" id="total"><span class="name">session total</span><span class="bar"><span class="fill"></span></span><span class="value">0</span></div>
<div id="players"></div>

<h2>Drums</h2>
<div id="drums" class="dim">off</div>

<h2>Peers</h2>
<ul id="peers"></ul>

<h2>Devices</h2>
<ul id="devices"></ul>

<script>
"use strict";
const $ = (id) => document.getElementById(id);

function meter(element, name, value) {
  element.querySelector(".name").textContent = name;
  element.querySelector(".fill").style.width = (Math.max(0, Math.min(127, value)) / 127 * 100) + "%";
  element.querySelector(".value").textContent = String(value);
  element.dataset.value = String(value);
}

function list(element, items) {
  element.replaceChildren(...items.map(([text, name]) => {
    const item = document.createElement("li");
    item.textContent = text;
    if (name !== undefined) item.dataset.name = name;
    return item;
  }));
}

function draw(state) {
  const status = state.status;
  const jam = status.jam;
  $("role").textContent = jam ? jam.role : "no jam";
  $("master").textContent = jam && jam.master ? jam.master : "nobody";
  $("tempo").textContent = jam && jam.tempo ? jam.tempo.toFixed(1) + " BPM" : "-";
  // The tempo box shows the tempo in force, unless someone is typing in it.
  if (jam && jam.tempo && document.activeElement !== $("bpm")) $("bpm").value = Math.round(jam.tempo);
  const link = jam ? jam.link : null;
  $("link").hidden = !link;
  if (link) $("link").textContent = "Ableton Link: " + link.peers + (link.peers === 1 ? " peer, " : " peers, ") +
    link.tempo.toFixed(1) + " BPM, phase " + link.phase.toFixed(1) + " of " + link.quantum + ", " + (link.playing ? "playing" : "stopped");
  // Bar and beat apart (the drums' style's meter; without drums, bars of 4 from the song's beat), a dot a beat.
  const drums = status.drums;
  const perBar = drums ? drums.beatsPerBar : 4;
  const bar = drums && drums.bar ? drums.bar : (jam && jam.songBeat ? Math.floor((jam.songBeat - 1) / perBar) + 1 : 0);
  const beat = drums && drums.beat ? drums.beat : (jam && jam.songBeat ? (jam.songBeat - 1) % perBar + 1 : 0);
  $("bar").textContent = bar ? String(bar) : "-";
  $("beat").textContent = beat ? String(beat) : "-";
  while ($("beats").children.length < perBar) $("beats").append(document.createElement("span"));
  while ($("beats").children.length > perBar) $("beats").lastChild.remove();
  [...$("beats").children].forEach((dot, index) => dot.classList.toggle("on", index + 1 === beat));

  meter($("total"), jam && jam.totalFromMaster ? "session total (master's)" : "session total", jam ? jam.total : 0);
  const players = jam ? jam.players : [];
  $("players").replaceChildren(...players.map((player) => {
    const row = $("total").cloneNode(true);
    row.removeAttribute("id");
    row.dataset.name = player.name;
    meter(row, player.name, player.level);
    return row;
  }));

  $("drums").textContent = drums
    ? drums.style + ", level " + drums.level + " of " + drums.levels + (drums.levelKept ? " (kept)" : " (following the activity)")
      + (drums.playing ? ", playing" : ", waiting for the rhythm")
      + (drums.audio ? "; audio on " + drums.audio.device + (drums.audio.playing ? "" : " (not playing)") : "")
    : "off";

  const session = status.session;
  list($("peers"), session ? session.peers.map((peer) => [
    peer.name + (peer.address ? " - " + peer.address : "") + (peer.roundTripMs === undefined ? ", not synced yet"
      : ", round trip " + peer.roundTripMs.toFixed(1) + " ms, clock offset " + peer.clockOffsetMs.toFixed(1) + " ms")
      + (peer.journalRepairs ? ", " + peer.journalRepairs + " repairs" : ""), peer.name]) : []);
  if (session && session.peers.length === 0) list($("peers"), [["session " + session.name + " on port " + session.port + ": no peers yet"]]);
  if (!session) list($("peers"), [["no network session"]]);

  const devices = [];
  if (status.alsa) {
    for (const [name, port] of Object.entries(status.alsa.ports)) {
      devices.push([name + " (ALSA) - " + (port.connections.length ? port.connections.join(", ") : "not connected"), name]);
    }
  }
  for (const [name, osc] of Object.entries(status.osc)) {
    // A phone sends from a port of its own per app or per control: one device per host, with its ports counted.
    const hosts = new Map();
    for (const c of osc.controllers) {
      if (!c.address) continue;
      const host = c.address.slice(0, c.address.lastIndexOf(":"));
      hosts.set(host, (hosts.get(host) || 0) + 1);
    }
    const heard = osc.controllers.length === 0 ? "no controller heard" : hosts.size
      ? [...hosts].map(([host, ports]) => ports > 1 ? host + " (" + ports + " ports)" : host).join(", ")
      : osc.controllers.length + " controller(s) heard";
    devices.push([name + " (OSC " + osc.listen + ") - " + heard, name]);
  }
  list($("devices"), devices.length ? devices : [["no devices"]]);

  $("controls").hidden = !state.control;
}

async function command(body) {
  const response = await fetch("/control", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  try { $("reply").textContent = JSON.parse(text).message; } catch { $("reply").textContent = text; }
}
$("start").onclick = () => command({ command: "start" });
$("stop").onclick = () => command({ command: "stop" });
$("setTempo").onclick = () => command({ command: "tempo", bpm: Number($("bpm").value) });

const events = new EventSource("/events");
events.onmessage = (event) => {
  $("connection").textContent = "live";
  $("connection").className = "live";
  draw(JSON.parse(event.data));
};
events.onerror = () => {
  $("connection").textContent = "reconnecting";
  $("connection").className = "";
};
</script>
</body>
</html>
"""#
}
