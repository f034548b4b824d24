// Lets @modelcontextprotocol/conformance (which imports fs.globSync, Node 22+) run on Node 20.
import { register } from "node:module";
register("./hooks.mjs", import.meta.url);
