// Registering one function per entry of a constexpr list of ops (an op
// list of kernels/*.def as an array of {name, ...}): shape tables and
// backends' kernel tables alike, with the entry's index a compile-time
// constant in the function, e.g.
//   AddEach<kReduce>(rules, [](auto i) { return InferReduce<decltype(i)::value>; });
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>

namespace kiln {

namespace internal {
template <const auto &kOps, class Table, class Make, size_t... I>
void AddEach(Table &table, Make make, std::index_sequence<I...>) {
  (table.push_back({kOps[I].name, make(std::integral_constant<size_t, I>{})}), ...);
}
} // namespace internal

// table += {kOps[i].name, make(std::integral_constant<size_t, i>{})} for
// every entry i.
template <const auto &kOps, class Table, class Make> void AddEach(Table &table, Make make) {
  internal::AddEach<kOps>(table, make, std::make_index_sequence<std::size(kOps)>{});
}

} // namespace kiln
