// An OpenAI Chat Completions server for one GGUF model, on node-llama-cpp, on the loopback.
//
//   node server.mjs --runtime DIR --gguf FILE --name NAME [--threads 1] [--parallel 1]
//                   [--context 4096] [--max-tokens 512] [--host 127.0.0.1] [--port 0]
//
// DIR holds node_modules/node-llama-cpp (installed once by the Python side). When it
// listens it prints one JSON line on stdout: {"listening": "http://HOST:PORT/v1", ...}.
// Serves GET /v1/models and POST /v1/chat/completions (whole or streamed, `usage` from
// the tokenizer and the sequence's token meter, `tools` as node-llama-cpp function calls).
// A request without `temperature` is answered greedily, so a run is repeatable.
// SIGTERM or SIGINT ends it.

import http from "node:http";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const opts = parseArgs(process.argv.slice(2));
const started = process.hrtime.bigint();

function parseArgs(argv) {
  const out = { threads: 1, parallel: 1, context: 4096, maxTokens: 512, host: "127.0.0.1", port: 0 };
  const names = { "--runtime": "runtime", "--gguf": "gguf", "--name": "name", "--threads": "threads", "--parallel": "parallel",
    "--context": "context", "--max-tokens": "maxTokens", "--host": "host", "--port": "port" };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key || argv[i + 1] === undefined) fail(`unknown or incomplete argument ${argv[i]}`);
    out[key] = ["runtime", "gguf", "name", "host"].includes(key) ? argv[i + 1] : Number(argv[i + 1]);
  }
  for (const key of ["runtime", "gguf", "name"]) if (!out[key]) fail(`--${key} is needed`);
  return out;
}

function fail(message) {
  process.stderr.write(`embedded model server: ${message}\n`);
  process.exit(2);
}

const lib = await import(pathToFileURL(join(opts.runtime, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
// the prebuilt CPU binary only: never a build from source, never a download, never a GPU probe
const llama = await lib.getLlama({ gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
  progressLogs: false, logLevel: lib.LlamaLogLevel.error, maxThreads: opts.threads });
const model = await llama.loadModel({ modelPath: opts.gguf });
const context = await model.createContext({ contextSize: opts.context, sequences: opts.parallel, threads: opts.threads });

// One chat per sequence, kept: a chat reuses the prefix its sequence has evaluated already.
const idle = [];
for (let i = 0; i < opts.parallel; i++) idle.push(new lib.LlamaChat({ contextSequence: context.getSequence() }));
const waiting = [];

async function borrow() {
  if (idle.length) return idle.pop();
  return new Promise((resolve) => waiting.push(resolve));
}

function giveBack(chat) {
  const next = waiting.shift();
  if (next) next(chat); else idle.push(chat);
}

class BadRequest extends Error {}

function text(content) {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p && p.type === "text" ? p.text : "")).join("");
  throw new BadRequest("a message's content must be a string or a list of text parts");
}

function parseArguments(raw) {
  if (raw == null || raw === "") return {};
  if (typeof raw !== "string") return raw;
  try { return JSON.parse(raw); } catch { return raw; }
}

// OpenAI messages as node-llama-cpp's chat history: a tool message becomes the result of its call.
function history(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw new BadRequest("messages must be a non-empty list");
  const items = [];
  const calls = new Map();
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") items.push({ type: "system", text: text(m.content) });
    else if (m.role === "user") items.push({ type: "user", text: text(m.content) });
    else if (m.role === "assistant") {
      const response = [];
      const said = text(m.content);
      if (said) response.push(said);
      for (const call of m.tool_calls || []) {
        const item = { type: "functionCall", name: call.function?.name ?? "", params: parseArguments(call.function?.arguments), result: "" };
        calls.set(call.id, item);
        response.push(item);
      }
      items.push({ type: "model", response });
    } else if (m.role === "tool") {
      const item = calls.get(m.tool_call_id);
      if (!item) throw new BadRequest(`a tool message answers no call: tool_call_id ${JSON.stringify(m.tool_call_id)}`);
      item.result = text(m.content);
    } else throw new BadRequest(`unknown message role ${JSON.stringify(m.role)}`);
  }
  items.push({ type: "model", response: [] });
  return items;
}

function functionsOf(body) {
  const choice = body.tool_choice ?? "auto";
  if (choice === "none" || !Array.isArray(body.tools) || body.tools.length === 0) return undefined;
  if (choice !== "auto") throw new BadRequest(`tool_choice ${JSON.stringify(choice)} is not supported (only "auto" and "none")`);
  const functions = {};
  for (const tool of body.tools) {
    if (tool.type !== "function" || !tool.function?.name) throw new BadRequest("only function tools with a name are supported");
    functions[tool.function.name] = { description: tool.function.description || undefined, params: tool.function.parameters };
  }
  return functions;
}

// OpenAI's frequency and presence penalties (default 0: none), over the reply's last 64 tokens
function penalties(body) {
  const frequencyPenalty = body.frequency_penalty ?? 0, presencePenalty = body.presence_penalty ?? 0;
  if (!frequencyPenalty && !presencePenalty) return false;
  return { lastTokens: 64, penalty: 1, frequencyPenalty, presencePenalty };
}

function promptTokens(chat, items, functions) {
  const state = chat.chatWrapper.generateContextState({ chatHistory: items, availableFunctions: functions, documentFunctionParams: true });
  return state.contextText.tokenize(model.tokenizer).length;
}

async function complete(body, onText) {
  const items = history(body.messages);
  const functions = functionsOf(body);
  const chat = await borrow();
  try {
    const prompt = promptTokens(chat, items, functions);
    const room = context.contextSize - prompt;
    if (room <= 0) throw new BadRequest(`the prompt is ${prompt} tokens, past the model's context of ${context.contextSize}`);
    const asked = body.max_completion_tokens ?? body.max_tokens ?? opts.maxTokens;
    const before = chat.sequence.tokenMeter.getState();
    const reply = await chat.generateResponse(items, {
      functions, documentFunctionParams: functions ? true : undefined,
      maxTokens: Math.min(asked, room), temperature: body.temperature ?? 0, topP: body.top_p ?? undefined,
      seed: body.seed ?? undefined, onTextChunk: onText, repeatPenalty: penalties(body),
    });
    const used = chat.sequence.tokenMeter.diff(before);
    if (process.env.NULLIUS_EMBEDDED_DEBUG) process.stderr.write(`meter ${JSON.stringify(used)} prompt ${prompt}\n`);
    return { reply, usage: { prompt_tokens: prompt, completion_tokens: used.usedOutputTokens, total_tokens: prompt + used.usedOutputTokens } };
  } finally {
    giveBack(chat);
  }
}

function toolCalls(reply) {
  return (reply.functionCalls || []).map((call, index) => ({
    index, id: `call_${randomBytes(6).toString("hex")}`, type: "function",
    function: { name: call.functionName, arguments: JSON.stringify(call.params ?? {}) },
  }));
}

function finish(reply) {
  const why = reply.metadata.stopReason;
  return why === "functionCalls" ? "tool_calls" : why === "maxTokens" ? "length" : "stop";
}

function send(res, status, body) {
  const data = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
  res.end(data);
}

function error(res, status, message, type) {
  send(res, status, { error: { message, type, param: null, code: null } });
}

async function chatCompletion(req, res, body) {
  const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
  const created = Math.floor(Date.now() / 1000);
  const head = { id, created, model: opts.name };
  if (!body.stream) {
    const { reply, usage } = await complete(body);
    const calls = toolCalls(reply).map(({ index, ...call }) => call);
    const message = { role: "assistant", content: reply.response, ...(calls.length ? { tool_calls: calls } : {}) };
    return send(res, 200, { ...head, object: "chat.completion", choices: [{ index: 0, message, finish_reason: finish(reply), logprobs: null }], usage });
  }
  const chunk = (choices, extra = {}) => `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices, ...extra })}\n\n`;
  let open = false;
  const start = () => {
    if (open) return;
    open = true;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]));
  };
  try {
    const { reply, usage } = await complete(body, (piece) => {
      start();
      res.write(chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]));
    });
    start();
    const calls = toolCalls(reply);
    if (calls.length) res.write(chunk([{ index: 0, delta: { tool_calls: calls }, finish_reason: null }]));
    res.write(chunk([{ index: 0, delta: {}, finish_reason: finish(reply) }]));
    if (body.stream_options?.include_usage) res.write(chunk([], { usage }));
    res.end("data: [DONE]\n\n");
  } catch (exc) {
    if (!open) throw exc;
    res.end(`data: ${JSON.stringify({ error: { message: String(exc?.message ?? exc), type: "server_error" } })}\n\n`);
  }
}

async function handle(req, res) {
  const path = (req.url || "").split("?")[0];
  if (req.method === "GET" && path === "/v1/models") {
    return send(res, 200, { object: "list", data: [{ id: opts.name, object: "model", created: 0, owned_by: "nullius-embedded" }] });
  }
  if (req.method !== "POST" || path !== "/v1/chat/completions") return error(res, 404, `no route ${req.method} ${path}`, "not_found");
  const parts = [];
  for await (const part of req) parts.push(part);
  let body;
  try { body = JSON.parse(Buffer.concat(parts).toString("utf8")); } catch { return error(res, 400, "the body is not JSON", "invalid_request_error"); }
  if (body === null || typeof body !== "object") return error(res, 400, "the body must be a JSON object", "invalid_request_error");
  if (body.model && body.model !== opts.name) return error(res, 404, `this server serves ${opts.name} only, not ${body.model}`, "invalid_request_error");
  try {
    await chatCompletion(req, res, body);
  } catch (exc) {
    const bad = exc instanceof BadRequest;
    if (!bad) process.stderr.write(`embedded model server: ${exc?.stack ?? exc}\n`);
    if (!res.headersSent) error(res, bad ? 400 : 500, String(exc?.message ?? exc), bad ? "invalid_request_error" : "server_error");
  }
}

const server = http.createServer((req, res) => { handle(req, res); });
server.keepAliveTimeout = 60_000;
server.listen(opts.port, opts.host, () => {
  const { port } = server.address();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(JSON.stringify({ listening: `http://${opts.host}:${port}/v1`, model: opts.name, load_seconds: Math.round(seconds * 1000) / 1000,
    context: context.contextSize, threads: opts.threads, parallel: opts.parallel }) + "\n");
});

for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => { server.close(); process.exit(0); });
