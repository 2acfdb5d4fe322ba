// Drives a servesim serve endpoint with the official OpenAI Node.js client
// and prints what it saw as one JSON object (read by TestOpenAINodeClient).
// Usage: node openai_client.cjs BASE_URL (e.g. http://127.0.0.1:8000/v1)
const OpenAI = require("openai");

async function main() {
  const client = new OpenAI({ baseURL: process.argv[2], apiKey: "unused", maxRetries: 0, timeout: 30000 });
  const out = {};
  const models = await client.models.list();
  out.models = models.data.map((m) => m.id);
  const c = await client.completions.create({ model: out.models[0], prompt: "Hello, simulated world!", max_tokens: 7 });
  out.completion = { text: c.choices[0].text, finish: c.choices[0].finish_reason, usage: c.usage };
  const stream = await client.chat.completions.create({
    model: out.models[0],
    messages: [{ role: "user", content: "Hi!" }],
    max_completion_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", chunks = 0, finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta && choice.delta.content) {
        text += choice.delta.content;
        chunks++;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  out.chat = { text, chunks, finish, usage };
  try {
    await client.completions.create({ model: out.models[0], prompt: "x", max_tokens: -3 });
    out.error = { status: 0 };
  } catch (e) {
    out.error = { status: e.status, message: e.message, type: e.type ?? (e.error && e.error.type) };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
