// The toym assembly as a CodeMirror 6 StreamLanguage: the same tokens as the Pygments lexer
// (toymachine/render/lexer.py), with the mnemonics taken from the ISA table (GET /api/meta).
import { StreamLanguage } from "@codemirror/language";

const NUMBER = /^[+-]?(?:(?:inf(?:inity)?|nan)\b|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/i;

export function toymLanguage(opcodes) {
  const mnemonics = new Set(opcodes.map((o) => o.toUpperCase()));
  return StreamLanguage.define({
    name: "toym",
    startState: () => ({ mode: "root" }),
    token(stream, state) {
      if (stream.sol()) state.mode = "root";
      if (stream.eatSpace()) return null;
      if (stream.match(/^[;#].*/)) return "comment";
      if (state.mode === "root") {
        if (stream.match(/^\.(?:data|array)\b/i)) { state.mode = "decl"; return "keyword"; }
        const word = stream.match(/^[a-z_]\w*/i);
        if (word) { state.mode = "operands"; return mnemonics.has(word[0].toUpperCase()) ? "keyword" : "invalid"; }
        stream.next();
        return null;
      }
      if (state.mode === "decl") {
        if (stream.match(/^null\b/i)) return "atom";
        if (stream.match(NUMBER)) return "number";
        if (stream.match(/^[a-z_]\w*/i)) return "variableName";
        if (stream.match(/^[[\],=]/)) return "punctuation";
        stream.next();
        return null;
      }
      if (stream.match(/^(?:[rt]\d+|acc)(?:\.t)?\b/i)) return "variableName.special";
      if (stream.match(/^[a-z_]\w*(?=\s*\[)/i)) return "variableName";
      if (stream.match(NUMBER)) return "number";
      if (stream.match(/^[[\],:]/)) return "punctuation";
      stream.next();
      return null;
    },
    languageData: { commentTokens: { line: ";" } },
  });
}
