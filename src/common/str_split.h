// Splitting text into words. Any thread.
#pragma once

#include <string_view>
#include <vector>

namespace trove {

// The words of s, separated by runs of spaces (only ' '), as views into s.
inline std::vector<std::string_view> SplitSpaces(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) words.push_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

}  // namespace trove
