// shapes.cc: the out-of-line members of shapes.h.
#include "shapes.h"

#include "mathlib.h"

namespace geo {

double Circle::area() const {
	double r2 = ml_square(radius_); // @CIRCLE_AREA
	return 3.14159265358979 * r2;
}

double Rect::area() const {
	double w = hi_.x - lo_.x;
	double h = hi_.y - lo_.y;
	return w * h; // @RECT_AREA
}

void Inventory::add(std::unique_ptr<Shape> s) {
	counts[s->name()]++;
	total_area += s->area(); // @INV_ADD
	shapes.push_back(std::move(s));
}

int Inventory::count(const std::string &name) const {
	auto it = counts.find(name);
	return it == counts.end() ? 0 : it->second;
}

} // namespace geo
