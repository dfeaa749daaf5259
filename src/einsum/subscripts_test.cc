// Notation: parsing, ellipsis expansion, implicit output, extents, typed errors.

#include "tenferro/einsum/subscripts.h"

#include <gtest/gtest.h>

namespace tenferro::einsum {
namespace {

std::vector<Shape> shapes(std::initializer_list<std::initializer_list<int64_t>> list) {
  std::vector<Shape> out;
  for (auto s : list) out.emplace_back(Shape(s));
  return out;
}

EinsumSpec spec_of(std::string_view text, const std::vector<Shape>& sh) {
  auto p = parse_subscripts(text);
  EXPECT_TRUE(p.has_value()) << p.error().to_string();
  auto r = resolve(*p, sh);
  EXPECT_TRUE(r.has_value()) << r.error().to_string();
  return *r;
}

TEST(Subscripts, ExplicitAndImplicitOutput) {
  EinsumSpec e = spec_of("ij,jk->ik", shapes({{2, 3}, {3, 4}}));
  EXPECT_EQ(e.output, (std::vector<Label>{'i', 'k'}));
  EXPECT_EQ(e.extent('j'), 3);
  // numpy: labels occurring exactly once, sorted.
  EinsumSpec i = spec_of("kj,ji", shapes({{2, 3}, {3, 4}}));
  EXPECT_EQ(i.output, (std::vector<Label>{'i', 'k'}));
  EinsumSpec t = spec_of("ii", shapes({{3, 3}}));
  EXPECT_TRUE(t.output.empty());
  EinsumSpec sc = spec_of(",i->i", shapes({{}, {5}}));
  EXPECT_EQ(sc.inputs[0].size(), 0u);
  EinsumSpec emb = spec_of("i->ii", shapes({{4}}));
  EXPECT_EQ(emb.output, (std::vector<Label>{'i', 'i'}));
}

TEST(Subscripts, EllipsisBroadcastsRightAligned) {
  // a: [2, 1, 5, 3] with "...ij" -> ellipsis dims (2, 1); b: [4, 3, 6] "...jk" -> (4).
  EinsumSpec e = spec_of("...ij,...jk", shapes({{2, 1, 5, 3}, {4, 3, 6}}));
  EXPECT_EQ(e.inputs[0], (std::vector<Label>{-2, -1, 'i', 'j'}));
  EXPECT_EQ(e.inputs[1], (std::vector<Label>{-1, 'j', 'k'}));
  EXPECT_EQ(e.extent(-1), 4);  // 1 broadcasts against 4
  EXPECT_EQ(e.extent(-2), 2);
  EXPECT_EQ(e.output, (std::vector<Label>{-2, -1, 'i', 'k'}));
  EinsumSpec mid = spec_of("i...j->j...i", shapes({{2, 7, 8, 3}}));
  EXPECT_EQ(mid.inputs[0], (std::vector<Label>{'i', -2, -1, 'j'}));
  EXPECT_EQ(mid.output, (std::vector<Label>{'j', -2, -1, 'i'}));
  EinsumSpec none = spec_of("...ii->...", shapes({{3, 3}}));
  EXPECT_TRUE(none.output.empty());
}

TEST(Subscripts, Utf8LabelsAreCodePoints) {
  EinsumSpec e = spec_of("αβ,βγ->αγ", shapes({{2, 3}, {3, 4}}));
  EXPECT_EQ(e.inputs[0], (std::vector<Label>{0x3B1, 0x3B2}));
  EXPECT_EQ(format_spec(e), "αβ,βγ->αγ");
  EinsumSpec cyr = spec_of("Њb, bА -> АЊ", shapes({{2, 2}, {2, 2}}));
  EXPECT_EQ(cyr.output, (std::vector<Label>{0x410, 0x40A}));
}

TEST(Subscripts, IntegerLabels) {
  auto sh = shapes({{2, 3}, {3, 4}});
  auto e = make_spec({{100000, 7}, {7, 3}}, {3, 100000}, sh);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->extent(100000), 2);
  EXPECT_EQ(make_spec({{-1, 7}, {7, 3}}, {3}, sh).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(make_spec({{1}, {7, 3}}, {3}, sh).error().code(), ErrorCode::kInvalidShape);
}

TEST(Subscripts, ParseErrorsNamePositions) {
  struct Case {
    const char* text;
    size_t pos;
  };
  for (const Case& c : {Case{"ij,j.k", 4}, Case{"ij-k", 2}, Case{"ij->k->l", 5}, Case{"i......j", 4},
                        Case{"ij->i,j", 5}, Case{"i>j", 1}}) {
    auto r = parse_subscripts(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().code(), ErrorCode::kParse) << c.text;
    EXPECT_NE(r.error().message().find("byte " + std::to_string(c.pos)), std::string::npos)
        << c.text << ": " << r.error().message();
  }
  const char bad[] = {'i', static_cast<char>(0xC3), ',', 'j', 0};
  auto r = parse_subscripts(bad);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("UTF-8"), std::string::npos);
}

TEST(Subscripts, ResolveErrors) {
  auto p = parse_subscripts("ij,jk->ik").value();
  EXPECT_EQ(resolve(p, shapes({{2, 3}})).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(resolve(p, shapes({{2, 3}, {4, 4}})).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(resolve(p, shapes({{2, -3}, {3, 4}})).error().code(), ErrorCode::kInvalidShape);  // negative extent
  EXPECT_EQ(resolve(p, shapes({{2, 3, 1}, {3, 4}})).error().code(), ErrorCode::kInvalidShape);
  auto q = parse_subscripts("ij->iz").value();
  EXPECT_EQ(resolve(q, shapes({{2, 3}})).error().code(), ErrorCode::kInvalidArgument);
  auto e = parse_subscripts("...ij->ij").value();
  EXPECT_EQ(resolve(e, shapes({{2}})).error().code(), ErrorCode::kInvalidShape);
}

}  // namespace
}  // namespace tenferro::einsum
