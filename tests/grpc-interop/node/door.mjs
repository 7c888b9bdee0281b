// The `user` example called over gRPC by Node's @grpc/grpc-js, with the messages of the
// server's own `.proto` export: unary calls, a server stream of 50 users, an application
// error, a deadline, a cancel, an unknown method and the health check.
// Usage: node door.mjs HOST:PORT users.proto
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const [address, protoPath] = process.argv.slice(2);
const options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const load = (path) => grpc.loadPackageDefinition(protoLoader.loadSync(path, options));
const services = load(protoPath).wirecall.services;
const health = load(fileURLToPath(new URL("health.proto", import.meta.url))).grpc.health.v1;
const insecure = grpc.credentials.createInsecure();
const users = new services.UserService(address, insecure);
const feed = new services.UserFeed(address, insecure);
const checker = new health.Health(address, insecure);

const unary = (client, method, request, options = {}) =>
  new Promise((resolve, reject) =>
    client[method](request, options, (error, reply) => (error ? reject(error) : resolve(reply))));

const fanly = { user_id: 1, name: "fanly", age: 18 };
assert.deepEqual((await unary(users, "get_user", { user: fanly })).value, fanly);
const missing = await unary(users, "find", { user_id: 99 });
assert.ok(missing.err && !missing.ok, "find(99) carries its application error");
console.log("unary: get_user echoed, find(99) returned its NotFound");

const listed = [];
await new Promise((resolve, reject) => {
  const call = feed.list_users({ count: 50 });
  call.on("data", (item) => listed.push(item.value.user_id));
  call.on("error", reject);
  call.on("end", resolve);
});
assert.deepEqual(listed, Array.from({ length: 50 }, (_, i) => i + 1));
console.log("server stream: 50 users in order");

const ended = (call) =>
  new Promise((resolve) => {
    call.on("data", () => {});
    call.on("error", (error) => resolve(error.code));
    call.on("end", () => resolve(grpc.status.OK));
  });
const endless = { count: 2000000000 };
const late = await ended(feed.list_users(endless, { deadline: Date.now() + 200 }));
assert.equal(late, grpc.status.DEADLINE_EXCEEDED);
console.log("deadline: DEADLINE_EXCEEDED");

const cancelled = await new Promise((resolve) => {
  const call = feed.list_users(endless);
  let seen = 0;
  call.on("data", () => {
    seen += 1;
    if (seen === 3) call.cancel();
  });
  call.on("error", (error) => resolve(error.code));
});
assert.equal(cancelled, grpc.status.CANCELLED);
console.log("cancel: CANCELLED, and the server carries on");

const unknown = await new Promise((resolve) =>
  users.makeUnaryRequest("/wirecall.services.UserService/nope", (x) => x, (x) => x,
    Buffer.alloc(0), (error) => resolve(error && error.code)));
assert.equal(unknown, grpc.status.UNIMPLEMENTED);

assert.equal((await unary(checker, "Check", { service: "" })).status, "SERVING");
assert.equal((await unary(checker, "Check", { service: "wirecall.services.UserFeed" })).status, "SERVING");
await assert.rejects(unary(checker, "Check", { service: "Nobody" }), { code: grpc.status.NOT_FOUND });
console.log("health: SERVING, NOT_FOUND for an unknown service");

for (const client of [users, feed, checker]) client.close();
