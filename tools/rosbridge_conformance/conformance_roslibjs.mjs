// rosbridge conformance checks driven by roslibjs (npm `roslib`), the official JavaScript client.
//
//   node tools/rosbridge_conformance/conformance_roslibjs.mjs ws://127.0.0.1:9090 [--secret-file F]
//
// Runs the same checks, with the same names, as conformance_roslibpy.py, against any rosbridge
// v2 server (the project's own, or rosbridge_suite's rosbridge_server on ROS 1 or ROS 2): each
// check opens its own connections and makes its own traffic, so nothing but the server is
// needed. Prints one JSON report on stdout: {"client", "url", "checks": [{name, kind, ok,
// detail, value}]}. kind "protocol": what rosbridge_suite does too; kind "extension": what only
// the project's server does (status replies to refused requests). Exit code 0 when every
// protocol check passed, 1 otherwise. See docs/deployment.md ("Conformance with
// rosbridge_suite").
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import * as ROSLIB from "roslib";
import WebSocket from "ws";

const args = process.argv.slice(2);
const url = args.find((a) => !a.startsWith("--")) ?? "ws://127.0.0.1:9090";
const secretIdx = args.indexOf("--secret-file");
const secret = secretIdx >= 0 ? readFileSync(args[secretIdx + 1], "utf8").split("\n")[0] : null;
const NS = "/conformance";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(pred, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(10);
  }
  return pred();
}

function authMessage(dest) {
  // rosauth's MAC: sha512(secret + client + dest + rand + t + level + end), whole seconds
  const t = Math.floor(Date.now() / 1000), end = t + 3600, level = "admin", client = "conformance";
  const rand = randomBytes(16).toString("hex");
  const mac = createHash("sha512").update(`${secret}${client}${dest}${rand}${t}${level}${end}`)
    .digest("hex");
  return { mac, client, dest, rand, t, level, end };
}

const opened = [];
async function connect({ auth = true } = {}) {
  const ros = new ROSLIB.Ros({});
  const statuses = [];
  ros.on("status", (m) => statuses.push(m));
  ros.statuses = statuses;
  const ready = new Promise((resolve, reject) => {
    ros.once("connection", resolve);
    ros.once("error", reject);
  });
  await ros.connect(url);
  await ready;
  if (secret && auth) {
    const a = authMessage(new URL(url).hostname);
    ros.authenticate(a.mac, a.client, a.dest, a.rand, a.t, a.level, a.end);
  }
  opened.push(ros);
  return ros;
}

// raw websocket peer (the `ws` package roslib itself uses): sends text roslibjs cannot produce
async function rawPeer() {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); });
  if (secret) {
    ws.send(JSON.stringify({ op: "auth", ...authMessage(new URL(url).hostname) }));
  }
  return ws;
}

// roslibjs keeps one status listener per id: record them per connection
function statusFor(ros, id) {
  const got = [];
  ros.on(`status:${id}`, (m) => got.push(m));
  return got;
}

function callService(ros, name, type, request, timeoutMs = 3000) {
  return new Promise((resolve) => {
    const srv = new ROSLIB.Service({ ros, name, serviceType: type });
    const timer = setTimeout(() => resolve({ ok: false, value: "timeout" }), timeoutMs);
    srv.callService(request, (v) => { clearTimeout(timer); resolve({ ok: true, value: v }); },
      (e) => { clearTimeout(timer); resolve({ ok: false, value: e }); });
  });
}

const checks = [];
function record(name, kind, ok, detail, value = null) {
  checks.push({ name, kind, ok: Boolean(ok), detail, value });
}

async function run(name, kind, fn) {
  try {
    await fn();
  } catch (e) {
    record(name, kind, false, `exception: ${e?.stack ?? e}`);
  }
}

const deep = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// -- the checks ---------------------------------------------------------------------------
await run("publish_subscribe", "protocol", async () => {
  const a = await connect(), b = await connect();
  const got = [];
  new ROSLIB.Topic({ ros: b, name: `${NS}/chatter`, messageType: "std_msgs/String" })
    .subscribe((m) => got.push(m.data));
  const pub = new ROSLIB.Topic({ ros: a, name: `${NS}/chatter`, messageType: "std_msgs/String" });
  pub.advertise();
  await sleep(300);
  const sent = Array.from({ length: 20 }, (_, i) => `équilibre ✓ ${i}`);
  for (const s of sent) pub.publish({ data: s });
  await waitFor(() => got.length >= 20, 3000);
  record("publish_subscribe", "protocol", deep(got, sent),
    `20 std_msgs/String sent, ${got.length} received in order and intact: ${deep(got, sent)}`,
    got.length);
});

await run("throttle_queue", "protocol", async () => {
  const name = `${NS}/fast`, type = "std_msgs/Int32";
  const a = await connect();
  const subs = { q1: [100, 1], q0: [100, 0], plain: [0, 0] };
  const got = {};
  for (const [k, [rate, len]] of Object.entries(subs)) {
    const ros = await connect();
    got[k] = [];
    new ROSLIB.Topic({ ros, name, messageType: type, throttle_rate: rate, queue_length: len })
      .subscribe((m) => got[k].push([Date.now(), m.data]));
  }
  const pub = new ROSLIB.Topic({ ros: a, name, messageType: type });
  pub.advertise();
  await sleep(300);
  const t0 = Date.now();
  let i = 0;
  while (Date.now() - t0 < 1500) { pub.publish({ data: i++ }); await sleep(10); }
  const seconds = (Date.now() - t0) / 1000;
  await sleep(300);
  const hz = Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v.length / seconds]));
  const pubHz = i / seconds;
  const ok = hz.q1 >= 5 && hz.q1 <= 12 && hz.q0 >= 5 && hz.q0 <= 12 && hz.plain > 0.5 * pubHz;
  record("throttle_queue", "protocol", ok,
    `published ${pubHz.toFixed(1)} Hz; throttle_rate 100 ms: queue_length 1 -> ` +
    `${hz.q1.toFixed(1)} Hz, queue_length 0 -> ${hz.q0.toFixed(1)} Hz; unthrottled ` +
    `${hz.plain.toFixed(1)} Hz`, { published_hz: pubHz, ...hz });
});

await run("latch", "protocol", async () => {
  const a = await connect();
  const pub = new ROSLIB.Topic({ ros: a, name: `${NS}/latched`, messageType: "std_msgs/String",
    latch: true });
  pub.advertise();
  await sleep(200);
  pub.publish({ data: "v1" });
  pub.publish({ data: "v2" });
  await sleep(300);
  const late = await connect();
  const got = [];
  new ROSLIB.Topic({ ros: late, name: `${NS}/latched`, messageType: "std_msgs/String" })
    .subscribe((m) => got.push(m.data));
  await waitFor(() => got.length > 0, 2000);
  record("latch", "protocol", got[0] === "v2",
    `a subscriber arriving after two publications got ${JSON.stringify(got)}`, got);
});

await run("relative_name", "protocol", async () => {
  const a = await connect(), b = await connect();
  const got = [];
  new ROSLIB.Topic({ ros: b, name: "conformance/relative", messageType: "std_msgs/String" })
    .subscribe((m) => got.push(m.data));
  const pub = new ROSLIB.Topic({ ros: a, name: `${NS}/relative`, messageType: "std_msgs/String" });
  pub.advertise();
  await sleep(300);
  pub.publish({ data: "hello" });
  await waitFor(() => got.length > 0, 2000);
  record("relative_name", "protocol", got[0] === "hello",
    `subscribed as 'conformance/relative', published on '/conformance/relative': ` +
    `${JSON.stringify(got)}`, got);
});

await run("nan_to_null", "protocol", async () => {
  const b = await connect();
  const got = [];
  new ROSLIB.Topic({ ros: b, name: `${NS}/nan`, messageType: "std_msgs/Float64" })
    .subscribe((m) => got.push(m));
  const peer = await rawPeer();
  peer.send(JSON.stringify({ op: "advertise", topic: `${NS}/nan`, type: "std_msgs/Float64" }));
  await sleep(300);
  peer.send(`{"op": "publish", "topic": "${NS}/nan", "msg": {"data": NaN}}`);
  await waitFor(() => got.length > 0, 2000);
  peer.close();
  record("nan_to_null", "protocol", got.length === 1 && got[0].data === null,
    `a peer published {"data": NaN} (Python's token); roslibjs parsed ${JSON.stringify(got)}`,
    got);
});

await run("fragments_in", "protocol", async () => {
  const a = await connect(), b = await connect();
  const got = [];
  new ROSLIB.Topic({ ros: b, name: `${NS}/fragmented`, messageType: "std_msgs/String" })
    .subscribe((m) => got.push(m.data));
  new ROSLIB.Topic({ ros: a, name: `${NS}/fragmented`, messageType: "std_msgs/String" })
    .advertise();
  await sleep(300);
  const payload = "x".repeat(500) + " end";
  const text = JSON.stringify({ op: "publish", topic: `${NS}/fragmented`, msg: { data: payload } });
  const size = Math.ceil(text.length / 3);
  for (let i = 0; i < 3; i++) {
    a.callOnConnection({ op: "fragment", id: "frag-js-1", data: text.slice(i * size, (i + 1) * size),
      num: i, total: 3 });
  }
  await waitFor(() => got.length > 0, 2000);
  record("fragments_in", "protocol", got.length === 1 && got[0] === payload,
    `a publish op sent as 3 fragment ops arrived ${got.length === 1 && got[0] === payload ?
      "whole" : JSON.stringify(got).slice(0, 80)}`, got.length);
});

await run("fragments_out", "protocol", async () => {
  const a = await connect(), b = await connect();
  const got = [];
  let fragments = 0;  // count what the transport reassembles (an overridable Transport method)
  const reassemble = b.transport.handleRosbridgeFragmentMessage.bind(b.transport);
  b.transport.handleRosbridgeFragmentMessage = (m) => { fragments++; reassemble(m); };
  b.on(`${NS}/big`, (m) => got.push(m.msg.data));
  b.callOnConnection({ op: "subscribe", id: "subscribe:big", topic: `${NS}/big`,
    type: "std_msgs/String", fragment_size: 100 });
  const pub = new ROSLIB.Topic({ ros: a, name: `${NS}/big`, messageType: "std_msgs/String" });
  pub.advertise();
  await sleep(300);
  const payload = "y".repeat(1000);
  pub.publish({ data: payload });
  await waitFor(() => got.length > 0, 2000);
  const whole = got.length === 1 && got[0] === payload;
  record("fragments_out", "protocol", whole && fragments >= 10,
    `a 1000-character message to a client with fragment_size 100 came as ${fragments} ` +
    `fragment ops, reassembled by roslibjs: ${whole}`, fragments);
});

await run("rosapi_topics", "protocol", async () => {
  const a = await connect();
  new ROSLIB.Topic({ ros: a, name: `${NS}/listed`, messageType: "std_msgs/String" }).advertise();
  await sleep(300);
  const topics = await new Promise((res, rej) => a.getTopics(res, rej));
  const type = await new Promise((res, rej) => a.getTopicType(`${NS}/listed`, res, rej));
  const i = topics.topics.indexOf(`${NS}/listed`);
  const ok = i >= 0 && topics.types[i] === "std_msgs/String" && type === "std_msgs/String";
  record("rosapi_topics", "protocol", ok,
    `/rosapi/topics lists ${NS}/listed: ${i >= 0} (type ${topics.types[i]}); ` +
    `/rosapi/topic_type: ${JSON.stringify(type)}`, { n_topics: topics.topics.length, type });
});

await run("rosapi_params", "protocol", async () => {
  const a = await connect();
  const value = { kp: 1.5, list: [1, 2, 3], name: "c3" };
  const p = new ROSLIB.Param({ ros: a, name: `${NS}/gains` });
  await new Promise((res, rej) => p.set(value, res, rej));
  const back = await new Promise((res, rej) => p.get(res, rej));
  const leaf = await new Promise((res, rej) =>
    new ROSLIB.Param({ ros: a, name: `${NS}/gains/kp` }).get(res, rej));
  const names = await new Promise((res, rej) => a.getParams(res, rej));
  const missing = await new Promise((res, rej) =>
    new ROSLIB.Param({ ros: a, name: `${NS}/no_such_param` }).get(res, rej));
  await new Promise((res, rej) => p.delete(res, rej));
  const gone = await new Promise((res, rej) => p.get(res, rej));
  const ok = deep(back, value) && leaf === 1.5 && names.includes(`${NS}/gains/kp`) &&
    missing === null && gone === null;
  record("rosapi_params", "protocol", ok,
    `set/get of a dict: ${deep(back, value)}; leaf ${NS}/gains/kp = ${leaf}; listed by ` +
    `get_param_names: ${names.includes(`${NS}/gains/kp`)}; missing -> ${JSON.stringify(missing)}; ` +
    `after delete -> ${JSON.stringify(gone)}`, { back, leaf, missing, gone });
});

await run("services", "protocol", async () => {
  const provider = await connect(), caller = await connect();
  const name = `${NS}/set_flag`, type = "std_srvs/SetBool";
  const srv = new ROSLIB.Service({ ros: provider, name, serviceType: type });
  await srv.advertise((req, resp) => {
    resp.success = !req.data;
    resp.message = `got ${req.data}`;
    return true;
  });
  await sleep(300);
  const r = await callService(caller, name, type, { data: true });
  const listed = await new Promise((res, rej) => caller.getServices(res, rej));
  const missing = await callService(caller, `${NS}/no_such_service`, type, { data: true });
  await srv.unadvertise();
  await sleep(300);
  const after = await callService(caller, name, type, { data: true });
  const ok = r.ok && deep(r.value, { success: false, message: "got true" }) &&
    listed.includes(name) && !missing.ok && !after.ok;
  record("services", "protocol", ok,
    `client-offered ${type}: ${JSON.stringify(r)}; listed by /rosapi/services: ` +
    `${listed.includes(name)}; missing service -> failure ${JSON.stringify(missing.value)}; ` +
    `after unadvertise_service -> failure ${!after.ok}`, { response: r.value });
});

await run("status_levels", "extension", async () => {
  const a = await connect();
  const e1 = statusFor(a, "bad-1"), e2 = statusFor(a, "bad-2"), e3 = statusFor(a, "bad-3");
  a.callOnConnection({ op: "publish", id: "bad-1", topic: `${NS}/never_advertised`,
    msg: { data: 1 } });
  a.callOnConnection({ op: "advertise", id: "bad-2", topic: `${NS}/untyped` });
  await waitFor(() => e1.length && e2.length, 2000);
  a.setStatusLevel("none");
  a.callOnConnection({ op: "publish", id: "bad-3", topic: `${NS}/never_advertised`,
    msg: { data: 1 } });
  await sleep(300);
  const muted = e3.length === 0;
  a.setStatusLevel("error");
  const e4 = statusFor(a, "bad-4");
  a.callOnConnection({ op: "publish", id: "bad-4", topic: `${NS}/never_advertised`,
    msg: { data: 1 } });
  await waitFor(() => e4.length, 2000);
  const ok = e1[0]?.level === "error" && e2[0]?.level === "error" && muted &&
    e4[0]?.level === "error";
  record("status_levels", "extension", ok,
    `publish to an unknown topic -> ${JSON.stringify(e1[0]?.msg)}; advertise without a type -> ` +
    `${JSON.stringify(e2[0]?.msg)}; after set_level none: ${muted ? "silent" : "answered"}; ` +
    `after set_level error: ${e4.length ? "answered" : "silent"}`);
});

if (secret) {
  await run("auth", "protocol", async () => {
    const good = await connect();
    const got = [];
    new ROSLIB.Topic({ ros: good, name: `${NS}/guarded`, messageType: "std_msgs/String" })
      .subscribe((m) => got.push(m.data));
    const intruder = await connect({ auth: false });
    const seen = [];
    new ROSLIB.Topic({ ros: intruder, name: `${NS}/guarded`, messageType: "std_msgs/String" })
      .subscribe((m) => seen.push(m.data));
    const bad = new ROSLIB.Topic({ ros: intruder, name: `${NS}/guarded`,
      messageType: "std_msgs/String" });
    bad.publish({ data: "from the intruder" });
    const pub = new ROSLIB.Topic({ ros: good, name: `${NS}/guarded`,
      messageType: "std_msgs/String" });
    pub.advertise();
    await sleep(300);
    pub.publish({ data: "from an authenticated client" });
    await waitFor(() => got.length > 0, 2000);
    await sleep(200);
    const ok = deep(got, ["from an authenticated client"]) && seen.length === 0;
    record("auth", "protocol", ok,
      `authenticated subscriber got ${JSON.stringify(got)}; the unauthenticated client read ` +
      `${seen.length} and its publication did not arrive: ${!got.includes("from the intruder")}`);
  });
}

const version = JSON.parse(readFileSync(new URL("./node_modules/roslib/package.json",
  import.meta.url), "utf8")).version;
for (const ros of opened) ros.close();
const report = { client: `roslibjs ${version}`, url, checks };
process.stdout.write(JSON.stringify(report, null, 1) + "\n");
process.exit(checks.every((c) => c.ok || c.kind !== "protocol") ? 0 : 1);
