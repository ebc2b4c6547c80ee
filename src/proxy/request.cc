// The proxy's request parser and request edits (request.h).
#include "proxy/request.h"

#include <algorithm>
#include <charconv>
#include <climits>

namespace trove::proxy {

using namespace memcache::cmd;  // NOLINT: the CMD_* vocabulary

namespace {

// Space-separated tokens of a line, as memcached's tokenizer sees them.
struct Tok {
  size_t off = 0, len = 0;
};

// Fills up to `max` tokens; returns how many the line has (all of them).
size_t Tokenize(std::string_view line, Tok* toks, size_t max) {
  size_t n = 0, i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    const size_t s = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (n < max) toks[n] = {s, i - s};
    ++n;
  }
  return n;
}

constexpr size_t kMaxToks = 64;

bool ParseI32(std::string_view s, int64_t* out) {
  int32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return false;
  *out = v;
  return true;
}

}  // namespace

int ParseRequest(std::string_view line, size_t total, ReqInfo* out) {
  *out = ReqInfo{};
  if (total < 4) return -1;
  Tok t[kMaxToks];
  const size_t n = Tokenize(line, t, kMaxToks);
  out->ntokens = static_cast<uint16_t>(std::min<size_t>(n, UINT16_MAX));
  // The command is the line up to its first space (a leading space is no command).
  const size_t sp = line.find(' ');
  const std::string_view word = line.substr(0, sp);
  int cmd = 0;
  if (word.size() >= 2 && word.size() <= 7) cmd = CmdOf(word);
  auto key_at = [&](size_t k) {
    out->key_token = static_cast<uint16_t>(k);
    if (k < n && k < kMaxToks) {
      out->key_off = t[k].off;
      out->key_len = t[k].len;
    }
  };
  auto noreply = [&] {
    const size_t last = std::min(n, kMaxToks) - 1;
    out->noreply = n > 1 && line.substr(t[last].off, t[last].len) == "noreply";
  };
  auto value_len = [&](size_t k) {
    int64_t v = 0;
    if (k >= kMaxToks || !ParseI32(line.substr(t[k].off, t[k].len), &v) || v < 0 ||
        v > INT_MAX - 2) {
      return false;
    }
    out->has_value = true;
    out->vlen = static_cast<size_t>(v);
    return true;
  };
  int ret = 0;
  switch (cmd) {
    case kCmdMg:
    case kCmdMd:
    case kCmdMa:
    case kCmdMe:
      out->meta = true;
      if (n < 2) return -1;
      key_at(1);
      break;
    case kCmdMn:
      out->meta = true;
      break;
    case kCmdMs:
      out->meta = true;
      if (n < 3) return -1;
      key_at(1);
      if (!value_len(2)) return -1;
      break;
    case kCmdGet:
    case kCmdGets:
      out->get_type = true;
      if (n < 2) return -1;
      key_at(1);
      noreply();
      break;
    case kCmdGat:
    case kCmdGats:
      out->get_type = true;
      if (n < 3) return -1;
      key_at(2);
      break;
    case kCmdSet:
    case kCmdAdd:
    case kCmdCas:
    case kCmdAppend:
    case kCmdPrepend:
    case kCmdReplace:
      if (n < 5) return -1;
      key_at(1);
      if (!value_len(4)) return -1;
      noreply();
      break;
    case kCmdIncr:
    case kCmdDecr:
    case kCmdTouch:
      if (n < 3) return -1;
      key_at(1);
      noreply();
      break;
    case kCmdDelete:
      if (n < 2) return -1;
      key_at(1);
      noreply();
      break;
    case kCmdQuit:
    case kCmdStats:
    case kCmdWatch:
    case kCmdVersion:
      break;
    default:
      ret = -2;
      break;
  }
  out->cmd = ret == 0 ? cmd : 0;
  if (out->meta && ret == 0) {
    // Meta flags: every token after the key (after the length for ms)
    // whose first byte is a letter.
    const size_t first = cmd == kCmdMs ? 3 : 2;
    for (size_t i = first; i < std::min(n, kMaxToks); ++i) {
      const char c = line[t[i].off];
      if (c >= 'A' && c <= 'z') out->flags |= uint64_t{1} << static_cast<unsigned>(c - 'A');
    }
  }
  return ret;
}

std::string_view RequestUd::Token(size_t idx) const {
  Tok t[kMaxToks];
  const size_t n = Tokenize(line(), t, kMaxToks);
  if (idx >= std::min(n, kMaxToks)) return {};
  return line().substr(t[idx].off, t[idx].len);
}

size_t RequestUd::FlagIndex(char c) const {
  if (!info.meta || !info.HasFlag(c)) return 0;
  Tok t[kMaxToks];
  const size_t n = std::min(Tokenize(line(), t, kMaxToks), kMaxToks);
  const size_t first = info.cmd == kCmdMs ? 3 : 2;
  for (size_t i = first; i < n; ++i) {
    if (bytes[t[i].off] == c) return i;
  }
  return 0;
}

bool RequestUd::SetLine(std::string_view new_line) {
  if (new_line.size() + 2 > kRequestMaxLen) return false;
  ReqInfo ni;
  if (ParseRequest(new_line, new_line.size() + 2, &ni) != 0) return false;
  // The value block stays as it was (an edit cannot change its length).
  ni.has_value = info.has_value;
  ni.vlen = info.vlen;
  std::string nb;
  nb.reserve(new_line.size() + 2 + value().size());
  nb.append(new_line).append("\r\n").append(value());
  bytes.swap(nb);
  line_len = new_line.size();
  eol_len = 2;
  info = ni;
  return true;
}

bool RequestUd::Render(size_t idx, char flag, std::string_view tok) {
  const std::string_view l = line();
  if (l.size() + eol_len + tok.size() + 2 > kRequestMaxLen) return false;
  Tok t[kMaxToks];
  const size_t n = std::min(Tokenize(l, t, kMaxToks), kMaxToks);
  if (idx >= n) return false;
  std::string out(l.substr(0, t[idx].off));
  if (flag != 0) out.push_back(flag);
  out.append(tok);
  if (idx + 1 < n) {
    if (flag != 0 || !tok.empty()) out.push_back(' ');
    const size_t end = t[n - 1].off + t[n - 1].len;
    out.append(l.substr(t[idx + 1].off, end - t[idx + 1].off));
  } else {
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }
  return SetLine(out);
}

bool RequestUd::Append(char flag, std::string_view tok) {
  const std::string_view l = line();
  if (l.size() + eol_len + tok.size() + 2 >= kRequestMaxLen) return false;
  std::string out(l);
  out.push_back(' ');
  if (flag != 0) out.push_back(flag);
  out.append(tok);
  return SetLine(out);
}

void BackendBytes(const RequestUd& r, std::string* out) {
  out->assign(r.bytes);
  if (r.info.meta) {
    if (!r.info.HasFlag('q')) return;
    Tok t[kMaxToks];
    const size_t n = std::min(Tokenize(r.line(), t, kMaxToks), kMaxToks);
    for (size_t i = 2; i < n; ++i) {
      if ((*out)[t[i].off] == 'q') (*out)[t[i].off] = ' ';
    }
  } else if (r.info.noreply && r.line_len > 0) {
    (*out)[r.line_len - 1] = 'Y';
  }
}

}  // namespace trove::proxy
