pub mod big_array;
