/** The authorize page's own stylesheet: one readable column from 320 px up, in the web app's colours. */
export const pageStyle = `:root {
  --ink: #1b1b1f;
  --muted: #4a4a55;
  --line: #8a8a96;
  --accent: #1d3f8f;
  --danger: #a4161a;
  --caution-ink: #5c3b00;
  --caution-paper: #fff4d6;
  color: var(--ink);
  background: #ffffff;
  font-family: system-ui, sans-serif;
  line-height: 1.5;
}
body {
  margin: 0;
}
main {
  max-width: 30rem;
  margin: 2rem auto 0;
  padding: 1rem;
}
h1 {
  font-size: 1.5rem;
  margin: 0.5rem 0 1rem;
}
label {
  display: block;
  font-weight: 600;
  margin: 0.75rem 0 0.25rem;
}
input {
  font: inherit;
  box-sizing: border-box;
  width: 100%;
  min-height: 2.75rem;
  padding: 0.5rem;
  border: 1px solid var(--line);
  border-radius: 0.375rem;
}
button {
  font: inherit;
  min-height: 2.75rem;
  padding: 0.5rem 1rem;
  border: 1px solid var(--accent);
  border-radius: 0.5rem;
  background: var(--accent);
  color: #ffffff;
  cursor: pointer;
  margin-top: 0.5rem;
}
:focus-visible {
  outline: 3px solid var(--accent);
  outline-offset: 2px;
}
.hint {
  color: var(--muted);
  font-size: 0.95rem;
  margin: 0.25rem 0;
}
.caution {
  background: var(--caution-paper);
  color: var(--caution-ink);
  border-left: 4px solid var(--caution-ink);
  padding: 0.5rem 0.75rem;
  border-radius: 0.25rem;
}
.problem {
  color: var(--danger);
  font-weight: 600;
}
`;
