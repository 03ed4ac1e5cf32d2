// Test program for line stepping in C++ compared with gdb (tcf/services):
// a constructor, a virtual call, function templates, overloads, std::string,
// methods and a lambda.
#include <cstdio>
#include <string>
namespace ns {
struct Shape {
  virtual ~Shape() {}
  virtual double area() const = 0;
};
struct Square : Shape {
  double s;
  explicit Square(double x) : s(x) {}
  double area() const override { return s * s; }
};
template <typename T> T twice(T v) { return v + v; }
int over(int x) { return x + 1; }
double over(double x) { return x + 0.5; }
int over(const std::string &s) { return (int)s.size(); }
}
static int counter;
struct Counter { void bump() { counter++; } void bump(int n) { counter += n; } };
int main() {
  ns::Square sq(3);
  ns::Shape *sh = &sq;
  double a = sh->area();
  int t = ns::twice(2) + (int)ns::twice(1.5);
  int o = ns::over(1) + (int)ns::over(2.0) + ns::over(std::string("abc"));
  Counter c; c.bump(); c.bump(3);
  auto lam = [&](int k) { return k + t; };
  std::printf("%f %d %d %d %d\n", a, t, o, counter, lam(1));
  return 0;
}
