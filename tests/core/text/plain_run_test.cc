#include "core/text/plain_run.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuadmit {
namespace {

// What PlainRun must equal: the byte-at-a-time scan it replaces.
size_t PlainRunByteByByte(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsPlainByte(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

TEST(PlainRun, KnowsWhichBytesArePlain) {
  int plain = 0;
  for (int c = 0; c < 256; ++c) plain += IsPlainByte(static_cast<unsigned char>(c)) ? 1 : 0;
  EXPECT_EQ(plain, 0x80 - 0x20 - 2);
  EXPECT_TRUE(IsPlainByte(' '));
  EXPECT_TRUE(IsPlainByte('~'));
  EXPECT_TRUE(IsPlainByte(0x7f));
  EXPECT_FALSE(IsPlainByte('"'));
  EXPECT_FALSE(IsPlainByte('\\'));
  EXPECT_FALSE(IsPlainByte('\n'));
  EXPECT_FALSE(IsPlainByte(0x1f));
  EXPECT_FALSE(IsPlainByte(0x80));
  EXPECT_FALSE(IsPlainByte(0xff));
}

TEST(PlainRun, WholeTextWhenEveryByteIsPlain) {
  EXPECT_EQ(PlainRun(""), 0u);
  EXPECT_EQ(PlainRun("a"), 1u);
  const std::string trail = "placement (binpack): node gpu-7 for nvidia.com/gpu=2; reserved";
  EXPECT_EQ(PlainRun(trail), trail.size());
}

// Every byte value, at every position of texts of 1 to 24 bytes, in front of every byte value
// too: a stop inside a word, in its last byte, in the tail after the last whole word, and the
// bytes right after a control byte (where a word's borrow could flag a plain one) all agree
// with the byte-at-a-time scan.
TEST(PlainRun, StopsAtTheFirstBytePrintedOtherwiseWhereverItIs) {
  for (size_t size = 1; size <= 24; ++size) {
    for (size_t at = 0; at < size; ++at) {
      for (int stop = 0; stop < 256; ++stop) {
        for (int after : {0x00, 0x20, 0x21, int{'"'}, int{'a'}, 0x80}) {
          std::string text(size, 'x');
          text[at] = static_cast<char>(stop);
          if (at + 1 < size) text[at + 1] = static_cast<char>(after);
          ASSERT_EQ(PlainRun(text), PlainRunByteByByte(text))
              << "size " << size << ", byte " << stop << " at " << at << ", then " << after;
        }
      }
    }
  }
}

TEST(PlainRun, ReadsOnlyTheTextItIsGiven) {
  const std::string buffer = "plain\"text";
  EXPECT_EQ(PlainRun(std::string_view(buffer).substr(0, 5)), 5u);  // the '"' after it unread
  EXPECT_EQ(PlainRun(buffer), 5u);
  EXPECT_EQ(PlainRun(std::string_view(buffer).substr(6)), 4u);
}

}  // namespace
}  // namespace gpuadmit
